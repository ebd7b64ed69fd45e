"""Adaptive sharpness (Kwon et al. 2021; docs/claims.md#claim-6): invariant under a
function-preserving rescaling of a ReLU net while λ_max moves, and on a quadratic the
ascent reaches the exact maximum over the adaptive ball."""

from __future__ import annotations

import math

import torch

from engine.landscape import adaptive_sharpness, adaptive_sharpness_flat, hessian_top_eigenvalue
from tests.engine.landscape.test_invariant_width import F64, _rescaled, _trained


def _trust_region_max(b: torch.Tensor, m: torch.Tensor, rho: float) -> float:
    """max over ‖u‖ ≤ ρ of bᵀu + ½uᵀMu (M ⪰ 0) in closed form up to one scalar: on the
    sphere, u = (μI − M)⁻¹b with μ > λ_max(M) the root of ‖u(μ)‖ = ρ (bisection on the
    eigenbasis; the secular equation of the trust-region problem)."""
    lam, q = torch.linalg.eigh(m)
    c = q.T @ b

    def norm(mu: float) -> float:
        return float(torch.linalg.vector_norm(c / (mu - lam)))

    lo = float(lam.max()) + 1e-12
    hi = lo + float(torch.linalg.vector_norm(b)) / rho + 1.0
    while norm(hi) > rho:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if norm(mid) > rho else (lo, mid)
    u = q @ (c / (0.5 * (lo + hi) - lam))
    return float(b @ u + 0.5 * u @ m @ u)


def _quadratic(p: int = 12, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(p, p, generator=g, dtype=F64)
    h = a @ a.T / p + 0.1 * torch.eye(p, dtype=F64)
    w = torch.randn(p, generator=g, dtype=F64)
    return h, w


def test_quadratic_matches_the_closed_form_maximum() -> None:
    """L = ½wᵀHw, T = |w|: L(w + T u) − L(w) = (T H w)ᵀu + ½uᵀ(THT)u, whose maximum over
    the ball is the trust-region problem's; the ascent reaches it, and at small ρ it is
    ρ‖T H w‖ to first order."""
    h, w = _quadratic()
    t = w.abs()
    b, m = t * (h @ w), t[:, None] * h * t[None, :]
    fn = lambda v: 0.5 * v @ h @ v  # noqa: E731
    for rho in (1e-3, 0.1, 0.5):
        exact = _trust_region_max(b, m, rho)
        got = adaptive_sharpness_flat(fn, w, rho=rho, steps=60)
        assert got.converged
        assert math.isclose(got.value, exact, rel_tol=1e-6), (rho, got.value, exact)
    small = adaptive_sharpness_flat(fn, w, rho=1e-3, steps=10)
    first = 1e-3 * float(torch.linalg.vector_norm(b))
    assert math.isclose(small.value, first, rel_tol=1e-2)
    # one step (ASAM's own) falls short of the maximum at a larger radius: steps matter
    one = adaptive_sharpness_flat(fn, w, rho=0.5, steps=1)
    assert one.value < _trust_region_max(b, m, 0.5) * (1 - 1e-4)


def test_at_a_minimum_the_start_is_seeded_and_the_answer_is_half_rho_squared_lambda() -> None:
    """At w = 0 of a quadratic with η > 0, T = ηI and the gradient vanishes: the maximum is
    ½η²ρ²λ_max(H) (a seeded random start, then ascent to the top eigenvector)."""
    h, _ = _quadratic(seed=1)
    fn = lambda v: 0.5 * v @ h @ v  # noqa: E731
    w0 = torch.zeros(h.shape[0], dtype=F64)
    runs = [
        adaptive_sharpness_flat(
            fn, w0, rho=1.0, eta=0.1, steps=200, generator=torch.Generator().manual_seed(5)
        )
        for _ in range(2)
    ]
    assert runs[0].history == runs[1].history  # deterministic given the seed
    expect = 0.5 * 0.1**2 * float(torch.linalg.eigvalsh(h).max())
    assert math.isclose(runs[0].value, expect, rel_tol=1e-4)


def test_adaptive_sharpness_is_invariant_and_lambda_max_is_not() -> None:
    """w_r → c_r·w_r, a_r → a_r/c_r keeps the function: S_ρ (η = 0) stays, λ_max moves.
    With η = 1 (T ≈ 1 for these weights: close to plain SAM) S_ρ moves too, so the test
    can tell an invariant measure from one that is not."""
    model, x, y = _trained()
    s0 = adaptive_sharpness(model, x, y)
    lam0 = hessian_top_eigenvalue(model, x, y, method="lanczos", iters=60, tol=1e-8).value
    sam0 = adaptive_sharpness(model, x, y, eta=1.0)
    assert s0.value > 1e-3  # a measurable rise: the comparison below can fail
    for c in (torch.full((16,), 4.0, dtype=F64), torch.linspace(0.25, 5.0, 16, dtype=F64)):
        other = _rescaled(model, c)
        torch.testing.assert_close(other(x), model(x))  # the same function
        s1 = adaptive_sharpness(other, x, y)
        assert math.isclose(s1.value, s0.value, rel_tol=1e-9), (s1.value, s0.value)
        lam1 = hessian_top_eigenvalue(other, x, y, method="lanczos", iters=60, tol=1e-8).value
        assert not math.isclose(lam1, lam0, rel_tol=0.1)  # raw sharpness moves
        sam1 = adaptive_sharpness(other, x, y, eta=1.0)
        assert not math.isclose(sam1.value, sam0.value, rel_tol=0.1)


def test_the_model_is_left_as_it_was() -> None:
    model, x, y = _trained()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    adaptive_sharpness(model, x.float(), y)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]) and v.dtype == before[k].dtype


def test_a_sharpness_table_from_before_adaptive_sharpness_reads(tmp_path) -> None:
    """A run written with the width but before adaptive_sharpness / adaptive_rho reads
    (``ADDED_LATER``), and claim 6 is decided on the width alone, saying so."""
    from engine.reproduce.claims import checklist
    from engine.results.tables import SharpnessRow
    from engine.run.validate import read_csv_table

    old = tmp_path / "sharpness.csv"
    head = "model,seed,hessian_top_eig,hessian_trace,width_1d,width_delta,width_censored,width_span,converged,above_chance"
    body = [
        f"{m},{s},{lam},1.0,{w},0.1,False,2.0,True,True"
        for m, lam, w in (("MLP-Attn", 0.02, 4.0), ("2L-ReLU", 0.005, 3.0))
        for s in range(3)
    ]
    old.write_text("\n".join([head, *body]) + "\n")
    rows = read_csv_table(old, SharpnessRow)
    assert "adaptive_sharpness" not in rows[0]
    c6 = next(c for c in checklist({"digits": {"sharpness": rows}}) if c["claim"] == 6)
    assert c6["measures"] == ["width_1d"] and "no adaptive sharpness" in c6["statistic"]
