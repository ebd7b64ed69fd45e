"""Batched kernel ridge (one Cholesky per ridge for all targets) against independent solves."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.spectral import KernelPair, fit_targets, kernel_ridge, label_targets, ridge_solve
from engine.spectral.alignment import eigen_target_set, eigen_targets, study_kernels


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _data(n: int = 60, t: int = 15, d: int = 12):
    x = torch.rand(n, d, generator=_gen(0), dtype=torch.float64)
    xt = torch.rand(t, d, generator=_gen(1), dtype=torch.float64)
    return x, xt


def _direct(k: torch.Tensor, kt: torch.Tensor, y: torch.Tensor, rho: float):
    """The pre-#16 route for one target: an eigh of K (and a dense solve as a second check)."""
    n = k.shape[0]
    lam, q = torch.linalg.eigh((k + k.T) / 2)
    lam_abs = float(torch.clamp(lam, min=0).sum()) / n
    alpha_eig = q @ ((q.T @ y) / (lam + rho * lam_abs)[:, None])
    alpha_dense = torch.linalg.solve(k + rho * lam_abs * torch.eye(n, dtype=k.dtype), y)
    return alpha_eig, alpha_dense, k @ alpha_dense, kt @ alpha_dense


def test_ridge_solve_matches_eigh_and_dense_solve_to_1e_8():
    x, _ = _data()
    k = x @ x.T + 0.1 * torch.eye(60, dtype=torch.float64)
    y = torch.randn(60, 5, generator=_gen(2), dtype=torch.float64)
    for rho, alpha in zip((1e-6, 1e-3, 1e-1), ridge_solve(k, y, (1e-6, 1e-3, 1e-1))):
        a_eig, a_dense, _, _ = _direct(k, k[:1], y, rho)
        np.testing.assert_allclose(alpha.numpy(), a_dense.numpy(), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(alpha.numpy(), a_eig.numpy(), rtol=1e-8, atol=1e-10)


def test_fit_targets_equals_one_fit_per_target_with_the_old_formulas():
    """Every target of the study at once gives the numbers of separate per-target fits."""
    x, xt = _data()
    kernels = study_kernels(x, xt)
    eig = eigen_target_set(x, xt, k=3)
    y_lab = torch.randint(0, 3, (60,), generator=_gen(3))
    yt_lab = torch.randint(0, 3, (15,), generator=_gen(4))
    targets = {
        "eig_top": (*eig["top"], None),
        "eig_bottom": (*eig["bottom"], None),
        "labels": (label_targets(y_lab, 3), label_targets(yt_lab, 3), yt_lab),
    }
    ridges = (1e-3, 1e-1)
    for name, pair in kernels.items():
        fits = fit_targets(pair, targets, ridges=ridges)
        for target, (ytr, yte, lab) in targets.items():
            ytr2, yte2 = ytr.reshape(60, -1), yte.reshape(15, -1)
            for res, rho in zip(fits[target], ridges):
                _, _, f_tr, f_te = _direct(pair.train, pair.test_train, ytr2, rho)
                mse = float(((f_te - yte2) ** 2).mean())
                assert res.test_mse == pytest.approx(mse, rel=1e-8), (name, target, rho)
                assert res.train_mse == pytest.approx(
                    float(((f_tr - ytr2) ** 2).mean()), rel=1e-7, abs=1e-14
                )
                assert res.test_rel_mse == pytest.approx(mse / float((yte2**2).mean()), rel=1e-8)
                if lab is not None:
                    acc = float((f_te.argmax(1) == lab).double().mean())
                    assert res.test_accuracy == pytest.approx(acc)
                else:
                    assert math.isnan(res.test_accuracy)
            # the single-target API is the same computation
            single = kernel_ridge(pair, ytr, yte, ridges=ridges, labels=lab)
            assert [r.test_mse for r in single] == pytest.approx(
                [r.test_mse for r in fits[target]], rel=1e-12
            )


def test_eigen_target_set_matches_separate_calls():
    x, xt = _data()
    both = eigen_target_set(x, xt, which=("top", "bottom"), k=2)
    for which in ("top", "bottom"):
        ytr, yte = eigen_targets(x, xt, which=which, k=2)
        np.testing.assert_allclose(both[which][0].numpy(), ytr.numpy(), rtol=1e-12)
        np.testing.assert_allclose(both[which][1].numpy(), yte.numpy(), rtol=1e-12)


def test_ridge_solve_rejects_bad_input():
    from engine.errors import ConfigError

    with pytest.raises(ConfigError):
        ridge_solve(torch.ones(3, 2, dtype=torch.float64), torch.ones(3), (1e-3,))
    with pytest.raises(ConfigError):
        ridge_solve(torch.eye(3, dtype=torch.float64), torch.ones(3), (0.0,))
    pair = KernelPair(torch.eye(4, dtype=torch.float64), torch.ones(2, 4, dtype=torch.float64))
    assert fit_targets(pair, {}) == {}
