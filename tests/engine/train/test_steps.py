"""``steps_to_target``: gradient descent on least squares needs steps ∝ κ (known answer)."""

from __future__ import annotations

import torch
from torch import nn

from engine.data import make_synthetic
from engine.results import loglog_slope
from engine.run.spec import TrainSpec
from engine.train.steps import steps_to_target


def _steps(features: torch.Tensor, u: torch.Tensor, tol: float, cap: int) -> tuple[int, bool]:
    """GD at step 1/λ_max(H) on the least squares of a linear model over ``features``
    [n, p], targets U z with equal energy in every eigendirection, to loss ≤ tol × start."""
    n, p = features.shape
    y = u @ torch.ones(u.shape[1], dtype=torch.float64)
    model = nn.Linear(p, 1, bias=False).double()
    nn.init.zeros_(model.weight)
    lam_max = float(torch.linalg.eigvalsh(features.T @ features)[-1])
    cfg = TrainSpec(optimizer="gd", lr=n / (2 * lam_max), l2=0.0)  # H = (2/n) FᵀF
    start = float((y**2).mean())
    got = steps_to_target(
        model, features, y, cfg, target=tol * start, max_steps=cap, generator=torch.Generator()
    )
    return got.steps, got.censored


def test_gd_on_least_squares_takes_steps_proportional_to_kappa() -> None:
    kappas = [10.0, 31.6, 100.0, 316.0, 1000.0]
    steps = []
    for k in kappas:
        s = make_synthetic(32, 32, kappa=k, seed=0)
        n, c = _steps(s.x, s.u, 1e-4, 100_000)
        assert not c
        steps.append(n)
    fit = loglog_slope(kappas, steps)
    assert 0.9 < fit.slope < 1.1 and fit.lo < 1.0 < fit.hi or abs(fit.slope - 1) < 0.05, fit


def _gd_answer(features: torch.Tensor, tol: float) -> int:
    """The first t with Σ_k (1 − λ_k/λ_max)^{2t} ≤ tol · r: the closed form of GD's loss
    at step 1/λ_max(H) when every eigendirection starts with unit residual."""
    lam = torch.linalg.eigvalsh(features @ features.T).flip(0)
    lam = lam[lam > 1e-12 * lam[0]]
    q = (1 - lam / lam[0]) ** 2
    t = 0
    while float((q**t).sum()) > tol * lam.numel():
        t += 1
    return t


def test_steps_are_gds_closed_form() -> None:
    for k in (10.0, 100.0):
        s = make_synthetic(16, 16, kappa=k, seed=1)
        n, _ = _steps(s.x, s.u, 1e-3, 100_000)
        assert abs(n - _gd_answer(s.x, 1e-3)) <= 1, (k, n)


def test_attention_features_cube_the_steps() -> None:
    """A linear model on G X (the linearized attention's features, Gram G³) needs
    κ(G)³-proportional steps: slope ≈ 3 against κ(G)."""
    kappas = [2.0, 3.0, 5.0, 8.0]
    steps = []
    for k in kappas:
        s = make_synthetic(16, 16, kappa=k, seed=0)
        f = (s.x @ s.x.T) @ s.x
        n, c = _steps(f, s.u, 1e-4, 100_000)
        assert not c
        steps.append(n)
    fit = loglog_slope(kappas, steps)
    assert 2.7 < fit.slope < 3.3, fit


def test_a_cell_that_cannot_reach_the_target_is_censored_at_the_cap() -> None:
    s = make_synthetic(16, 16, kappa=1e4, seed=0)
    n, c = _steps(s.x, s.u, 1e-8, 50)
    assert c and n == 50
