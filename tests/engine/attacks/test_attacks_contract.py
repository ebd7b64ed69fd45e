"""The attack contract: ε-ball and pixel box, loss increase, no parameter gradients,
train/eval mode restored, determinism, batching, MLP-Attn's C held fixed."""

from __future__ import annotations

import pytest
import torch

from engine.attacks import fgsm, mim, per_example_loss, pgd, run_attack
from engine.models import MLPAttn, TwoLayerNet

DT = torch.float64
ATTACK_OPTS = {
    "fgsm": {},
    "pgd": {"steps": 8, "alpha": 0.05},
    "mim": {"steps": 5},
}


def _data(n: int = 12, n_out: int = 1, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 6, generator=g, dtype=DT)
    x[:3, 0], x[3:6, 1] = 0.0, 1.0  # some pixels on the faces of [0, 1]
    if n_out == 1:
        y = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).to(DT)
    else:
        y = torch.randint(0, n_out, (n,), generator=g)
    return x, y


def _model(kind: str, n_out: int = 1, seed: int = 0):
    if kind == "relu":
        return TwoLayerNet(6, 8, n_out, sigma_w=1.0, train_output=True, seed=seed, dtype=DT)
    ctx = torch.rand(10, 6, generator=torch.Generator().manual_seed(7), dtype=DT)
    return MLPAttn(ctx, 8, n_out, sigma_w=1.0, train_output=True, seed=seed, dtype=DT)


@pytest.mark.parametrize("kind", ["relu", "attn"])
@pytest.mark.parametrize("norm", ["linf", "l2"])
@pytest.mark.parametrize("name", ["fgsm", "pgd", "mim"])
def test_stays_in_ball_and_box_and_raises_loss(name: str, norm: str, kind: str) -> None:
    n_out = 3 if kind == "attn" else 1  # covers both losses across the grid
    model = _model(kind, n_out)
    x, y = _data(n_out=n_out)
    eps = 0.25 if norm == "linf" else 0.6
    gen = torch.Generator().manual_seed(0)
    opts = dict(ATTACK_OPTS[name], norm=norm, **({"generator": gen} if name == "pgd" else {}))
    res = run_attack(name, model, x, y, eps=eps, **opts)
    assert res.x_adv.shape == x.shape and res.x_adv.dtype == x.dtype
    delta = res.x_adv - x
    if norm == "linf":
        assert float(delta.abs().max()) <= eps + 1e-12
    else:
        assert float(delta.norm(dim=1).max()) <= eps * (1 + 1e-12)
    assert float(res.x_adv.min()) >= 0.0 and float(res.x_adv.max()) <= 1.0
    assert float(delta.abs().max()) > 0.5 * eps if norm == "linf" else True  # it moved
    torch.testing.assert_close(res.loss_before, per_example_loss(model, x, y).detach())
    torch.testing.assert_close(res.loss_after, per_example_loss(model, res.x_adv, y).detach())
    assert float(res.loss_after.mean()) > float(res.loss_before.mean())


@pytest.mark.parametrize("n_out", [1, 4])
def test_pgd_at_least_fgsm_on_average(n_out: int) -> None:
    model = _model("relu", n_out)
    x, y = _data(n=30, n_out=n_out)
    f = fgsm(model, x, y, eps=0.3)
    p = pgd(model, x, y, eps=0.3, steps=40, alpha=0.01, generator=torch.Generator().manual_seed(0))
    assert float(p.loss_after.mean()) >= float(f.loss_after.mean())
    assert float(p.loss_after.mean()) > float(p.loss_before.mean())


def test_pgd_seeded_generator_is_deterministic_and_restarts_keep_best() -> None:
    model = _model("relu", 3)
    x, y = _data(n_out=3)

    def run(seed: int, restarts: int = 1):
        g = torch.Generator().manual_seed(seed)
        return pgd(model, x, y, eps=0.3, steps=4, alpha=0.05, restarts=restarts, generator=g)

    a, b, c = run(3), run(3), run(4)
    assert torch.equal(a.x_adv, b.x_adv) and torch.equal(a.loss_after, b.loss_after)
    assert not torch.equal(a.x_adv, c.x_adv)
    # restart 1 of a 3-restart run draws the same start as the single run: best ≥ it
    best = run(3, restarts=3)
    assert bool((best.loss_after >= a.loss_after - 1e-15).all())
    assert bool((best.loss_after > a.loss_after).any())
    torch.testing.assert_close(best.loss_after, per_example_loss(model, best.x_adv, y).detach())


@pytest.mark.parametrize("name", ["fgsm", "pgd", "mim"])
@pytest.mark.parametrize("was_training", [True, False])
def test_no_param_grads_and_mode_restored(name: str, was_training: bool) -> None:
    model = _model("attn", 1)
    x, y = _data()
    model.train(was_training)
    seen = []

    def loss_fn(m, xx, yy):
        seen.append(all(not mod.training for mod in m.modules()))
        return per_example_loss(m, xx, yy)

    opts = dict(ATTACK_OPTS[name], loss_fn=loss_fn)
    run_attack(name, model, x, y, eps=0.2, **opts)
    assert seen and all(seen)  # every loss evaluation ran in eval mode
    assert all(mod.training is was_training for mod in model.modules())
    params = list(model.parameters())
    assert len(params) == 2 and all(p.requires_grad for p in params)
    assert all(p.grad is None for p in params)


def test_existing_param_grads_untouched() -> None:
    model = _model("relu", 1)
    x, y = _data()
    for p in model.parameters():
        p.grad = torch.full_like(p, 0.5)
    pgd(model, x, y, eps=0.2, steps=3, alpha=0.05, generator=torch.Generator().manual_seed(0))
    assert all(torch.equal(p.grad, torch.full_like(p, 0.5)) for p in model.parameters())


@pytest.mark.parametrize("name", ["fgsm", "pgd", "mim"])
def test_mlp_attn_context_unchanged(name: str) -> None:
    model = _model("attn", 3)
    x, y = _data(n_out=3)
    c0 = model.attention.C.clone()
    res = run_attack(name, model, x, y, eps=0.3, **ATTACK_OPTS[name])
    assert torch.equal(model.attention.C, c0)
    # the loss was taken through the fixed-C attention, not the bare head
    head_only = fgsm(model.head, x, y, eps=0.3)
    if name == "fgsm":
        assert not torch.equal(res.x_adv, head_only.x_adv)


@pytest.mark.parametrize("name", ["fgsm", "mim", "pgd"])
def test_batched_equals_unbatched(name: str) -> None:
    model = _model("relu", 3)
    x, y = _data(n_out=3)
    opts = dict(ATTACK_OPTS[name])
    if name == "pgd":
        opts["random_start"] = False
    full = run_attack(name, model, x, y, eps=0.2, **opts)
    parts = run_attack(name, model, x, y, eps=0.2, batch_size=5, **opts)
    torch.testing.assert_close(parts.x_adv, full.x_adv, rtol=0, atol=1e-12)
    torch.testing.assert_close(parts.loss_after, full.loss_after)


def test_works_under_no_grad_and_inference_mode_and_float32() -> None:
    model = _model("relu", 1)
    x, y = _data()
    ref = fgsm(model, x, y, eps=0.2).x_adv
    with torch.no_grad():
        a = fgsm(model, x, y, eps=0.2).x_adv
    with torch.inference_mode():
        xi, yi = x.clone(), y.clone()
        b = fgsm(model, xi, yi, eps=0.2).x_adv
    assert torch.equal(a, ref) and torch.equal(b, ref)
    m32 = TwoLayerNet(6, 8, sigma_w=1.0, dtype=torch.float32)
    r32 = mim(m32, x.float(), y.float(), eps=0.2, steps=2)
    assert r32.x_adv.dtype == torch.float32 and r32.loss_after.dtype == torch.float32


def test_empty_batch() -> None:
    model = _model("relu", 1)
    x, y = _data()
    res = pgd(model, x[:0], y[:0], eps=0.2, steps=2)
    assert res.x_adv.shape == (0, 6) and res.loss_before.shape == (0,)
