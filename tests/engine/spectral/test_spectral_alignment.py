"""Kernel-target alignment, eigen-targets, kernel ridge and the kernels of the study."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.errors import ConfigError
from engine.models import LinearizedAttention
from engine.spectral import (
    alignment_share,
    eigen_targets,
    geometric_singular_values,
    kernel_alignment,
    kernel_ridge,
    label_targets,
    prescribed_spectrum,
    study_kernels,
)
from engine.spectral.alignment import KernelPair


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_alignment_of_top_eigenvector_is_its_eigenvalue_share():
    x = torch.randn(20, 6, generator=_gen(0), dtype=torch.float64)
    g = x @ x.T
    lam, q = torch.linalg.eigh(g)
    u1 = q[:, -1]
    assert kernel_alignment(g, u1) == pytest.approx(
        float(lam[-1] / torch.linalg.norm(g)), rel=1e-12
    )
    assert kernel_alignment(g, u1) == pytest.approx(alignment_share(lam.numpy()), rel=1e-10)
    # G³ concentrates on u1: its share is larger
    assert kernel_alignment(g @ g @ g, u1) > kernel_alignment(g, u1)


def test_alignment_invariances():
    y = torch.randn(9, generator=_gen(1), dtype=torch.float64)
    assert kernel_alignment(torch.outer(y, y), y) == pytest.approx(1.0, rel=1e-12)
    k = torch.randn(9, 9, generator=_gen(2), dtype=torch.float64)
    k = k @ k.T
    a = kernel_alignment(k, y)
    assert kernel_alignment(7.0 * k, -3.0 * y) == pytest.approx(a, rel=1e-12)
    ym = torch.stack([y, 2 * y], 1)
    assert kernel_alignment(k, ym) == pytest.approx(a, rel=1e-12)


def test_eigen_targets_are_sums_of_gram_eigenvectors():
    x = prescribed_spectrum(geometric_singular_values(1e3, 8), 30, 8, _gen(3))
    xt = torch.randn(11, 8, generator=_gen(4), dtype=torch.float64)
    xn = x / x.norm(dim=1, keepdim=True)
    lam, q = torch.linalg.eigh(xn @ xn.T)
    top, bottom = q[:, -3:], q[:, -8:-5]  # eigh ascending: top 3 and bottom 3 non-null
    for which, basis in (("top", top), ("bottom", bottom)):
        ytr, yte = eigen_targets(x, xt, which=which, k=3)
        assert float((ytr**2).mean()) == pytest.approx(1.0, rel=1e-12)
        coef = basis.T @ ytr
        np.testing.assert_allclose(coef.abs().numpy(), np.full(3, math.sqrt(30 / 3)), rtol=1e-8)
        assert yte.shape == (11,)
    # defined by a formula in input space: a test point equal to a training point gets its value
    ytr, yte = eigen_targets(x, x[:4], which="top", k=3)
    np.testing.assert_allclose(yte.numpy(), ytr[:4].numpy(), rtol=1e-12)
    with pytest.raises(ConfigError):
        eigen_targets(x, xt, which="middle")


def test_kernel_ridge_matches_a_direct_solve():
    x = torch.randn(25, 5, generator=_gen(5), dtype=torch.float64)
    xt = torch.randn(7, 5, generator=_gen(6), dtype=torch.float64)
    y, yt = (
        torch.randn(25, generator=_gen(7), dtype=torch.float64),
        torch.randn(7, dtype=torch.float64),
    )
    k, kt = torch.exp(-(torch.cdist(x, x) ** 2)), torch.exp(-(torch.cdist(xt, x) ** 2))
    (res,) = kernel_ridge(KernelPair(k, kt), y, yt, ridges=(1e-2,))
    lam = 1e-2 * float(torch.trace(k)) / 25
    f = kt @ torch.linalg.solve(k + lam * torch.eye(25, dtype=torch.float64), y)
    assert res.test_mse == pytest.approx(float(((f - yt) ** 2).mean()), rel=1e-9)
    assert res.alignment == pytest.approx(kernel_alignment(k, y))
    assert math.isnan(res.test_accuracy)
    with pytest.raises(ConfigError):
        kernel_ridge(KernelPair(k, kt), y, yt, ridges=(0.0,))


def test_cubed_kernel_helps_aligned_and_hurts_misaligned_targets():
    # the dual implication on data with a known spectrum (κ(G) = 1e2)
    x = prescribed_spectrum(geometric_singular_values(1e2, 10), 120, 10, _gen(8))
    xtr, xte = x[:80], x[80:]
    kernels = study_kernels(xtr, xte)
    out = {}
    for which in ("top", "bottom"):
        ytr, yte = eigen_targets(xtr, xte, which=which, k=2)
        for name in ("G", "G3"):
            (res,) = kernel_ridge(kernels[name], ytr, yte, ridges=(1e-3,))
            out[which, name] = res
    # G³ is more aligned with top targets and far less with bottom ones
    assert out["top", "G3"].alignment > out["top", "G"].alignment
    assert out["bottom", "G3"].alignment < out["bottom", "G"].alignment
    # at equal relative ridge, the cubed spectrum shrinks the bottom directions away
    assert out["bottom", "G3"].test_rel_mse > 0.3
    assert out["bottom", "G"].test_rel_mse < 1e-3
    assert out["top", "G3"].test_rel_mse < 1e-2


def test_study_kernels_blocks():
    x = torch.rand(12, 5, generator=_gen(9), dtype=torch.float64)
    xt = torch.rand(4, 5, generator=_gen(10), dtype=torch.float64)
    ks = study_kernels(x, xt)
    xn = x / x.norm(dim=1, keepdim=True)
    g = xn @ xn.T
    np.testing.assert_allclose(ks["G"].train.numpy(), g.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ks["G3"].train.numpy(), (g @ g @ g).numpy(), rtol=1e-10)
    # arccos(1 − δ) ≈ √(2δ): a rounding δ ~ 1e-16 in ⟨x, x⟩ costs ~1e-8 on the diagonal
    np.testing.assert_allclose(ks["ntk_raw"].train.diagonal().numpy(), 0.5, rtol=1e-7)
    att = LinearizedAttention(x)
    a, at = att(x), att(xt)
    u = (at @ a.T).clamp(-1, 1)
    ref = u * (math.pi - torch.arccos(u)) / (2 * math.pi)
    np.testing.assert_allclose(ks["ntk_attn"].test_train.numpy(), ref.numpy(), rtol=1e-10)
    assert ks["G3"].test_train.shape == (4, 12)


def test_label_targets_and_accuracy():
    lab = torch.tensor([0, 2, 1, 2])
    y = label_targets(lab, 3)
    assert y.shape == (4, 3)
    np.testing.assert_allclose(y.sum(1).numpy(), 0.0, atol=1e-15)
    yb = label_targets(torch.tensor([1.0, -1.0]), 1)
    assert yb.shape == (2, 1)
    # a kernel that memorises: identity on train, test = copies of train points
    k = torch.eye(4, dtype=torch.float64)
    (res,) = kernel_ridge(KernelPair(k, k.clone()), y, y, ridges=(1e-6,), labels=lab)
    assert res.test_accuracy == 1.0
