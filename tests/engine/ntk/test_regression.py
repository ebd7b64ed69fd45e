"""Kernel regression: interpolation, ridge vs solve, gradient flow vs matrix exponential."""

from __future__ import annotations

import pytest
import torch

from engine.errors import ConfigError, EngineError
from engine.models import normalize_rows
from engine.ntk import analytic_ntk, kernel_regression

F64 = torch.float64


def _problem(n: int = 15, nt: int = 6, d: int = 30, k: int | None = None, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = normalize_rows(torch.randn(n + nt, d, generator=g, dtype=F64))
    kern = analytic_ntk(x)
    shape = (n,) if k is None else (n, k)
    y = torch.randn(*shape, generator=g, dtype=F64)
    return kern[:n, :n], kern[n:, :n], kern[:n, :n], y


@pytest.mark.parametrize("k", [None, 3])
def test_ridge_small_lambda_interpolates(k: int | None) -> None:
    ktr, _, _, y = _problem(k=k)
    fit = kernel_regression(ktr, ktr, y, 1e-12)
    assert fit.shape == y.shape
    assert torch.allclose(fit, y, atol=1e-7)


def test_ridge_matches_direct_solve() -> None:
    ktr, kte, _, y = _problem(k=2, seed=1)
    lam = 0.1
    ref = kte @ torch.linalg.solve(ktr + lam * torch.eye(15, dtype=F64), y)
    assert torch.allclose(kernel_regression(ktr, kte, y, lam), ref, atol=1e-12)


def test_flow_matches_matrix_exponential() -> None:
    ktr, kte, _, y = _problem(seed=2)
    t = 3.0
    eye = torch.eye(15, dtype=F64)
    ref = kte @ torch.linalg.solve(ktr, (eye - torch.linalg.matrix_exp(-t * ktr)) @ y)
    got = kernel_regression(ktr, kte, y, 0.0, method="flow", t=t)
    assert torch.allclose(got, ref, atol=1e-9)
    lam = 0.2
    a = ktr + lam * eye
    ref2 = kte @ torch.linalg.solve(a, (eye - torch.linalg.matrix_exp(-t * a)) @ y)
    assert torch.allclose(kernel_regression(ktr, kte, y, lam, method="flow", t=t), ref2, atol=1e-9)


def test_flow_limits() -> None:
    ktr, kte, _, y = _problem(k=2, seed=3)
    ridge0 = kernel_regression(ktr, kte, y, 1e-12)
    flow_inf = kernel_regression(ktr, kte, y, 0.0, method="flow", t=1e9)
    assert torch.allclose(flow_inf, ridge0, atol=1e-7)
    ridge = kernel_regression(ktr, kte, y, 0.5)
    assert torch.allclose(
        kernel_regression(ktr, kte, y, 0.5, method="flow", t=1e6), ridge, atol=1e-10
    )
    t = 1e-7  # first order: f_t ≈ t K* y
    assert torch.allclose(
        kernel_regression(ktr, kte, y, 0.0, method="flow", t=t), t * kte @ y, rtol=1e-5
    )


def test_jitter_rescues_singular_psd_kernel() -> None:
    x = normalize_rows(torch.randn(5, 3, generator=torch.Generator().manual_seed(4), dtype=F64))
    x = torch.cat([x, x[:2]])  # duplicated rows: singular Gram
    k = x @ x.T
    y = torch.ones(7, dtype=F64)
    assert torch.isfinite(kernel_regression(k, k, y, 0.0)).all()


def test_errors() -> None:
    ktr, kte, _, y = _problem()
    with pytest.raises(EngineError, match="positive definite"):
        kernel_regression(
            -torch.eye(4, dtype=F64), torch.ones(2, 4, dtype=F64), torch.ones(4, dtype=F64), 0.0
        )
    with pytest.raises(ConfigError):
        kernel_regression(ktr, kte, y, -1.0)
    with pytest.raises(ConfigError):
        kernel_regression(ktr, kte, y, 0.1, method="flow")
    with pytest.raises(ConfigError):
        kernel_regression(ktr, kte, y, 0.1, method="lsq")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        kernel_regression(ktr, kte[:, :3], y, 0.1)
    with pytest.raises(ConfigError):
        kernel_regression(ktr, kte, y[:4], 0.1)


def test_objective_ridge_is_the_minimiser_of_the_linearized_objective() -> None:
    """Minimising (1/n)‖Jδ − r‖² + (λ/2)‖δ‖² in closed form equals kernel ridge with JJᵀ at
    ρ = nλ/2 (``resolve_ridge("objective")``, the rule ``ntk.ridge`` uses), not at the bare λ."""
    from engine.errors import ConfigError as CE
    from engine.ridge import resolve_ridge

    g = torch.Generator().manual_seed(0)
    n, p, lam = 30, 50, 0.1
    jac = torch.randn(n, p, generator=g, dtype=torch.float64)
    r = torch.randn(n, generator=g, dtype=torch.float64)
    delta = torch.linalg.solve(
        2 / n * jac.T @ jac + lam * torch.eye(p, dtype=torch.float64), 2 / n * jac.T @ r
    )
    rho = resolve_ridge("objective", n=n, lam=lam).value
    assert rho == pytest.approx(n * lam / 2)
    k = jac @ jac.T
    assert torch.allclose(kernel_regression(k, k, r, rho), jac @ delta, atol=1e-10)
    assert not torch.allclose(kernel_regression(k, k, r, 1e-3), jac @ delta, atol=1e-3)
    assert resolve_ridge("lambda", n=n, lam=1e-3).value == 1e-3
    assert resolve_ridge(0.25, n=n, lam=lam).value == 0.25
    with pytest.raises(CE):
        resolve_ridge("nope", n=n, lam=lam)
