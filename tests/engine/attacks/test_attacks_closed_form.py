"""The attacks and adversarial training on the closed-form input gradient equal autograd's.

float64, tiny random networks: FGSM / PGD / MIM give the same adversarial examples with
``engine="fused"`` (closed form, no autograd call) as with ``engine="autograd"``; and a
few epochs of PGD adversarial training take the same weights on the fused path
(closed-form gradient and step) as on the autograd one, to 1e-10.
"""

from __future__ import annotations

import pytest
import torch

from engine.attacks import run_attack
from engine.errors import ConfigError
from engine.models import MLPAttn, TwoLayerNet
from engine.run.spec import TrainSpec
from engine.train.adversarial import make_perturb
from engine.train.loop import train

DT = torch.float64
N, D, M = 12, 6, 8


def _setup(kind: str, n_out: int):
    g = torch.Generator().manual_seed(3)
    x = torch.rand(N, D, generator=g, dtype=DT)
    if n_out == 1:
        y = torch.sign(torch.randn(N, generator=g, dtype=DT))
    else:
        y = torch.randint(0, n_out, (N,), generator=g)
    shift = x.mean(0)
    kw = dict(sigma_w=1.0, seed=1, dtype=DT, input_shift=shift)
    net = TwoLayerNet(D, M, n_out, **kw) if kind == "relu" else MLPAttn(x - shift, M, n_out, **kw)
    return net, x, y


def _no_autograd(*args: object, **kw: object) -> None:
    raise AssertionError("the fused path called autograd")


OPTS = {
    "fgsm": {},
    "pgd": {"steps": 4, "alpha": 0.05, "restarts": 2},
    "mim": {"steps": 3},
}


@pytest.mark.parametrize("norm", ["linf", "l2"])
@pytest.mark.parametrize("attack", ["fgsm", "pgd", "mim"])
@pytest.mark.parametrize(("kind", "n_out"), [("relu", 1), ("attn", 3)])
def test_attack_same_examples_fused_and_autograd(
    kind: str, n_out: int, attack: str, norm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    net, x, y = _setup(kind, n_out)

    def run(engine: str):
        kw = dict(OPTS[attack], norm=norm, engine=engine)
        if attack == "pgd":
            kw["generator"] = torch.Generator().manual_seed(5)
        return run_attack(attack, net, x, y, eps=0.2, **kw)

    ref = run("autograd")
    monkeypatch.setattr(torch.autograd, "grad", _no_autograd)
    got = run("fused")
    assert (ref.x_adv - x).abs().max() > 0.05  # the attack moved the points
    if norm == "linf":  # sign steps: the same iterates exactly
        assert torch.equal(got.x_adv, ref.x_adv)
    torch.testing.assert_close(got.x_adv, ref.x_adv, rtol=0, atol=1e-12)
    torch.testing.assert_close(got.loss_after, ref.loss_after, rtol=1e-12, atol=1e-14)


def test_attack_rejects_an_unknown_engine() -> None:
    net, x, y = _setup("relu", 1)
    with pytest.raises(ConfigError, match="fused or autograd"):
        run_attack("fgsm", net, x, y, eps=0.1, engine="jax")


@pytest.mark.parametrize("recipe", ["pgd", "fgsm_rs"])
@pytest.mark.parametrize(("kind", "n_out"), [("relu", 1), ("attn", 3)])
def test_adversarial_training_fused_equals_autograd(
    kind: str, n_out: int, recipe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same batch order, same random starts: the same weights after 4 epochs (12 steps);
    the fused run never calls autograd."""
    weights = []
    for engine in ("autograd", "fused"):
        if engine == "fused":
            monkeypatch.setattr(torch.autograd, "grad", _no_autograd)
            monkeypatch.setattr(torch.Tensor, "backward", _no_autograd)
        net, x, y = _setup(kind, n_out)
        cfg = TrainSpec(optimizer="adam", lr=1e-2, epochs=4, batch_size=5, l2=1e-3, engine=engine)
        perturb = make_perturb(
            recipe, 0.2, 3, None, generator=torch.Generator().manual_seed(2), engine=engine
        )
        gen = torch.Generator().manual_seed(4)
        losses = [st.loss for st in train(net, x, y, cfg, generator=gen, perturb=perturb)]
        weights.append((losses, [p.detach().clone() for p in net.parameters()]))
    (l_ref, w_ref), (l_got, w_got) = weights
    assert (w_ref[0] - _setup(kind, n_out)[0].head.weight).abs().max() > 1e-3  # it trained
    torch.testing.assert_close(l_got, l_ref, rtol=1e-10, atol=1e-12)
    for a, b in zip(w_got, w_ref):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
