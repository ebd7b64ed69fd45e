"""Training on features computed once gives the same weights as the full forward per step."""

from __future__ import annotations

import pytest
import torch

from engine.models import MLPAttn, TwoLayerNet
from engine.models.qkv import QKVAttn
from engine.run.spec import TrainSpec
from engine.train import train


class _Slow(torch.nn.Module):
    """Wraps a model without the ``fixed_features`` flag: the loop runs model(x) every step."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def _data(n: int = 48, d: int = 10):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, d, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (n,), generator=g)
    return x, y


@pytest.mark.parametrize("kind", ["relu", "attn"])
@pytest.mark.parametrize("train_output", [False, True])
def test_fixed_features_path_gives_the_same_training(kind, train_output):
    x, y = _data()

    def build():
        if kind == "relu":
            return TwoLayerNet(10, 32, 3, train_output=train_output, seed=1, dtype=torch.float64)
        return MLPAttn(x, 32, 3, train_output=train_output, seed=1, dtype=torch.float64)

    cfg = TrainSpec(epochs=6, lr=1e-2, batch_size=16)
    fast, slow = build(), build()
    assert fast.fixed_features
    h_fast = [s.loss for s in train(fast, x, y, cfg, generator=torch.Generator().manual_seed(3))]
    h_slow = [
        s.loss for s in train(_Slow(slow), x, y, cfg, generator=torch.Generator().manual_seed(3))
    ]
    assert h_fast == pytest.approx(h_slow, rel=1e-10)
    for (name, a), (_, b) in zip(fast.named_parameters(), slow.named_parameters()):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=name)
    # the weights did move: the comparison is not between two untrained nets
    assert float((fast.head.weight - build().head.weight).detach().abs().max()) > 1e-4


def test_qkv_opts_out_and_perturbed_training_recomputes():
    x, _ = _data()
    assert QKVAttn(x, 8, 3, seed=0).fixed_features is False
    # with a perturbation the loop must use model(x_perturbed): a perturbation that zeroes
    # the input changes the training, which the fixed-feature path would ignore
    xb, y = _data()
    cfg = TrainSpec(epochs=2, lr=1e-2, batch_size=16)
    a = TwoLayerNet(10, 16, 3, seed=1, dtype=torch.float64)
    b = TwoLayerNet(10, 16, 3, seed=1, dtype=torch.float64)
    list(train(a, xb, y, cfg, generator=torch.Generator().manual_seed(0)))
    list(
        train(
            b,
            xb,
            y,
            cfg,
            generator=torch.Generator().manual_seed(0),
            perturb=lambda m, u, v: 1.0 - u,
        )
    )
    assert not torch.allclose(a.weight, b.weight)
