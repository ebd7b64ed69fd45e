"""Training loop: learns, is deterministic, diverges and cancels cleanly."""

from __future__ import annotations

import pytest
import torch

from engine.errors import Cancelled, DivergedError
from engine.experiments.spec import TrainSpec
from engine.models import TwoLayerNet
from engine.train import data_loss, evaluate, train


def _data(n: int = 64, d: int = 6) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, d, generator=g, dtype=torch.float64)
    w = torch.randn(d, generator=g, dtype=torch.float64)
    yb = torch.sign((x - 0.5) @ w)
    ym = ((x - 0.5) @ torch.randn(d, 3, generator=g, dtype=torch.float64)).argmax(1)
    return x, yb, ym


def _run(y: torch.Tensor, n_out: int, **cfg: object) -> tuple[TwoLayerNet, list]:
    x = _data()[0]
    net = TwoLayerNet(6, 32, n_out, sigma_w=1.0, seed=0, dtype=torch.float64)
    spec = TrainSpec(**{"epochs": 40, "lr": 1e-2, "batch_size": 16, **cfg})
    stats = list(train(net, x, y, spec, generator=torch.Generator().manual_seed(0)))
    return net, stats


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_loss_decreases(task: str) -> None:
    _, yb, ym = _data()
    y, k = (yb, 1) if task == "binary" else (ym, 3)
    net, stats = _run(y, k)
    assert len(stats) == 40
    assert stats[-1].loss < 0.7 * stats[0].loss
    loss, acc = evaluate(net, _data()[0], y)
    with torch.no_grad():
        direct = float(data_loss(net(_data()[0]), y))
    assert acc > 0.7 and loss == pytest.approx(direct)


def test_deterministic() -> None:
    y = _data()[1]
    a, sa = _run(y, 1)
    b, sb = _run(y, 1)
    torch.testing.assert_close(a.weight, b.weight, rtol=0, atol=0)
    assert [s.loss for s in sa] == [s.loss for s in sb]


def test_full_batch_gd_and_sgd_run() -> None:
    y = _data()[1]
    for opt in ("gd", "sgd"):
        _, stats = _run(y, 1, optimizer=opt, lr=0.5)
        assert stats[-1].loss < stats[0].loss


def test_divergence_names_epoch_and_lr() -> None:
    y = _data()[1]
    with pytest.raises(DivergedError, match=r"diverged at epoch \d+.*lower learning rate"):
        _run(y, 1, optimizer="sgd", lr=1e200)


def test_cancel() -> None:
    x, y, _ = _data()
    net = TwoLayerNet(6, 8, 1, dtype=torch.float64)
    with pytest.raises(Cancelled):
        list(
            train(
                net,
                x,
                y,
                TrainSpec(epochs=5),
                generator=torch.Generator(),
                should_stop=lambda: True,
            )
        )
