"""make_pgd_perturb: the perturbation of Madry PGD adversarial training."""

from __future__ import annotations

import pytest
import torch

from engine.attacks import pgd
from engine.errors import ConfigError
from engine.models import MLPAttn, TwoLayerNet
from engine.run.spec import TrainSpec
from engine.train.adversarial import make_pgd_perturb
from engine.train.loop import train

DT = torch.float64


def _data(n: int = 16, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 6, generator=g, dtype=DT)
    y = torch.randint(0, 3, (n,), generator=g)
    return x, y


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_perturb_equals_pgd_with_same_seed(norm: str) -> None:
    model = TwoLayerNet(6, 8, 3, sigma_w=1.0, seed=1, dtype=DT)
    x, y = _data()
    perturb = make_pgd_perturb(0.3, 5, 0.05, True, norm, torch.Generator().manual_seed(9))
    ref = pgd(
        model,
        x,
        y,
        eps=0.3,
        steps=5,
        alpha=0.05,
        norm=norm,
        generator=torch.Generator().manual_seed(9),
    )
    model.train()
    xa = perturb(model, x, y)
    assert model.training and all(p.grad is None for p in model.parameters())
    assert not xa.requires_grad
    torch.testing.assert_close(xa, ref.x_adv, rtol=0, atol=1e-12)
    # the generator advances: the next call draws a new start
    assert not torch.equal(perturb(model, x, y), xa)


def test_perturb_inside_training_loop() -> None:
    """The lead's loop runs with the perturbation and the model is left trainable."""
    ctx, y = _data()
    model = MLPAttn(ctx, 8, 3, sigma_w=1.0, seed=0, dtype=DT)
    c0 = model.attention.C.clone()
    perturb = make_pgd_perturb(0.1, 3, 0.04, True, "linf", torch.Generator().manual_seed(0))
    w0 = model.mlp.weight.detach().clone()
    stats = list(
        train(
            model,
            ctx,
            y,
            TrainSpec(epochs=2, batch_size=8, lr=1e-2),
            generator=torch.Generator().manual_seed(0),
            perturb=perturb,
        )
    )
    assert len(stats) == 2 and all(torch.isfinite(torch.tensor(s.loss)) for s in stats)
    assert not torch.equal(model.mlp.weight.detach(), w0)
    assert torch.equal(model.attention.C, c0)


def test_perturb_options_checked_up_front() -> None:
    with pytest.raises(ConfigError):
        make_pgd_perturb(eps=-0.1)
    with pytest.raises(ConfigError):
        make_pgd_perturb(norm="l1")
    with pytest.raises(ConfigError):
        make_pgd_perturb(steps=0)


def test_fgsm_rs_matches_the_formula_of_wong_et_al() -> None:
    """FGSM-RS (Wong et al. 2020): δ₀ ~ U[−ε, ε], one step α·sign(∇ₓL) from x + δ₀,
    clipped to the ε-box and [0, 1], written out by hand here."""
    from engine.attacks.base import loss_from_output
    from engine.train.adversarial import FGSM_RS_STEP, make_fgsm_rs_perturb

    model = TwoLayerNet(6, 8, 3, sigma_w=1.0, seed=2, dtype=DT)
    x, y = _data(seed=3)
    eps = 0.2
    xa = make_fgsm_rs_perturb(eps, generator=torch.Generator().manual_seed(5))(model, x, y)
    u = torch.rand(x.shape, generator=torch.Generator().manual_seed(5), dtype=DT)
    lo, hi = (x - eps).clamp(0, 1), (x + eps).clamp(0, 1)
    z0 = torch.clamp(x + (2 * u - 1) * eps, lo, hi).requires_grad_(True)
    model.eval()
    (g,) = torch.autograd.grad(loss_from_output(model(z0), y).sum(), z0)
    want = torch.clamp(z0.detach() + FGSM_RS_STEP * eps * g.sign(), lo, hi)
    torch.testing.assert_close(xa, want, rtol=0, atol=1e-12)
    # the step is 1.25ε, so most coordinates leave the random start
    assert (xa - z0.detach()).abs().max() > 0.5 * eps


def test_adv_recipe_options_checked_and_resolved() -> None:
    from engine.run.spec import FlipSpec

    assert FlipSpec(pgd_steps=7).adv_training_steps() == 7
    assert FlipSpec(pgd_steps=7, adv_steps=3).adv_training_steps() == 3
    assert FlipSpec(adv_recipe="fgsm_rs").adv_training_steps() == 1
    with pytest.raises(ConfigError, match="flip.adv_recipe"):
        FlipSpec(adv_recipe="trades")
    with pytest.raises(ConfigError, match="flip.adv_steps"):
        FlipSpec(adv_recipe="fgsm_rs", adv_steps=5)
    with pytest.raises(ConfigError, match="flip.adv_alpha"):
        FlipSpec(adv_alpha=-1.0)
