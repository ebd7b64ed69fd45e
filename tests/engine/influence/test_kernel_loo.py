"""Kernel leave-one-out influence against explicit refits (float64)."""

from __future__ import annotations

import pytest
import torch

from engine.errors import ConfigError
from engine.influence import loo_prediction_change, ntk_loo_influence, refit_loo
from engine.models import TwoLayerNet

DT = torch.float64


def _structured_entk(net: TwoLayerNet, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """Θ = (X̃₁X̃₂ᵀ) ⊙ (D₁D₂ᵀ)/m, inline (tests only; the engine's lives in engine.ntk)."""
    f1, f2 = net.features(x1), net.features(x2)
    d1 = (f1 @ net.weight.T > 0).to(DT)
    d2 = (f2 @ net.weight.T > 0).to(DT)
    return (f1 @ f2.T) * (d1 @ d2.T) / net.width


@pytest.fixture
def problem():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(30, 6, generator=g, dtype=DT)
    xt = torch.rand(7, 6, generator=g, dtype=DT)
    net = TwoLayerNet(6, 32, sigma_w=1.0, seed=1, dtype=DT)
    labels = torch.randint(0, 3, (30,), generator=g)
    labels_t = torch.randint(0, 3, (7,), generator=g)
    return _structured_entk(net, x, x), _structured_entk(net, xt, x), labels, labels_t


def test_loo_equals_refit_binary_mse(problem):
    k, kt, labels, labels_t = problem
    y, yt = (labels == 0).to(DT) * 2 - 1, (labels_t == 0).to(DT) * 2 - 1
    lam = 1e-2
    infl = ntk_loo_influence(k, kt, y, yt, lam)
    truth = refit_loo(k, kt, y, yt, lam)
    assert infl.shape == (7, 30)
    assert truth.abs().max() > 1e-4  # a non-trivial problem
    torch.testing.assert_close(infl, truth, atol=1e-8, rtol=1e-8)


@pytest.mark.parametrize("loss,centre", [("mse", False), ("mse", True), ("ce", False)])
def test_loo_equals_refit_multiclass(problem, loss, centre):
    k, kt, labels, labels_t = problem
    lam = 3e-3
    infl = ntk_loo_influence(k, kt, labels, labels_t, lam, loss=loss, centre=centre, chunk=3)
    truth = refit_loo(k, kt, labels, labels_t, lam, loss=loss, centre=centre)
    torch.testing.assert_close(infl, truth, atol=1e-8, rtol=1e-8)


def test_prediction_change_formula_matches_refit(problem):
    k, kt, labels, _ = problem
    lam = 1e-2
    f, df = loo_prediction_change(k, kt, labels, lam)
    y = torch.nn.functional.one_hot(labels, 3).to(DT)
    for i in (0, 13, 29):
        keep = torch.arange(30) != i
        a = k[keep][:, keep] + lam * torch.eye(29, dtype=DT)
        f_i = kt[:, keep] @ torch.linalg.solve(a, y[keep])
        torch.testing.assert_close(f + df[:, i], f_i, atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(f, kt @ torch.linalg.solve(k + lam * torch.eye(30, dtype=DT), y))


def test_duplicate_of_test_point_is_helpful():
    # RBF kernel: training point 0 sits exactly at the test point with the right label, far
    # from the rest; removing it must raise the test loss (positive influence), while a far
    # point with the opposite label is harmful-or-neutral relative to it.
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.zeros(1, 2, dtype=DT), 3 + torch.randn(10, 2, generator=g, dtype=DT)])
    y = torch.cat([torch.ones(1, dtype=DT), -torch.ones(10, dtype=DT)])
    xt, yt = torch.zeros(1, 2, dtype=DT), torch.ones(1, dtype=DT)
    rbf = lambda a, b: torch.exp(-(torch.cdist(a, b) ** 2))  # noqa: E731
    infl = ntk_loo_influence(rbf(x, x), rbf(xt, x), y, yt, 0.1)
    assert infl[0, 0] > 0.1
    assert infl[0, 0] > infl[0, 1:].max()


def test_indefinite_kernel_raises():
    k = torch.diag(torch.tensor([1.0, -5.0], dtype=DT))
    with pytest.raises(ConfigError):
        ntk_loo_influence(k, k, torch.ones(2, dtype=DT), torch.ones(2, dtype=DT), 1e-3)
    with pytest.raises(ConfigError):
        ntk_loo_influence(
            k, k, torch.ones(2, dtype=DT), torch.ones(2, dtype=DT), 1e-3, loss="hinge"
        )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_triangular_inverse_matches_the_solve(dtype):
    from engine.influence.kernel_loo import _tri_inverse

    g = torch.Generator().manual_seed(2)
    m = torch.randn(12, 12, generator=g, dtype=DT)
    chol = torch.linalg.cholesky(m @ m.T + torch.eye(12, dtype=DT)).to(dtype)
    eye = torch.eye(12, dtype=dtype)
    ref = torch.linalg.solve_triangular(chol, eye, upper=False)
    tol = 1e-12 if dtype == DT else 1e-5
    torch.testing.assert_close(_tri_inverse(chol, eye), ref, atol=tol, rtol=tol)


def test_triangular_inverse_runs_lapack_on_one_blas_thread(monkeypatch):
    """Two OpenBLAS threads on a busy 2-core machine made trtri 40-70x slower than one
    (docs/benchmarks.md#triangular-inverse): the call must run under a one-thread limit."""
    from scipy.linalg import lapack
    from threadpoolctl import threadpool_info

    from engine.influence.kernel_loo import _tri_inverse

    seen: list[list[int]] = []
    real = lapack.dtrtri

    def spy(a, lower=0):
        seen.append([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"])
        return real(a, lower=lower)

    monkeypatch.setattr(lapack, "dtrtri", spy)
    chol = torch.linalg.cholesky(torch.eye(5, dtype=DT) * 2.0)
    _tri_inverse(chol, torch.eye(5, dtype=DT))
    assert seen and all(n == 1 for n in seen[0])
