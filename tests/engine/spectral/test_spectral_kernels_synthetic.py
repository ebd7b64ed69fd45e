"""Kernel spectra (NTK raw vs attention) and the float64 sweep of κ(G³)."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
import torch

from engine.errors import ConfigError
from engine.spectral import (
    first_unresolved,
    geometric_singular_values,
    kernel_spectrum,
    ntk_spectra,
    prescribed_spectrum,
    synthetic_sweep,
    write_sweep_csv,
)


def test_kernel_spectrum_known_diagonal():
    lam = 1.0 / np.arange(1, 201, dtype=np.float64) ** 2  # λ_k = k^-2
    q, _ = torch.linalg.qr(
        torch.randn(200, 200, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    )
    k = (q * torch.from_numpy(lam)) @ q.T
    ks = kernel_spectrum(k)
    np.testing.assert_allclose(ks.eigenvalues, lam, rtol=1e-8, atol=1e-14)
    assert ks.rank == 200
    assert ks.kappa == pytest.approx(200.0**2, rel=1e-6)
    assert ks.decay_exponent == pytest.approx(2.0, rel=1e-6)
    assert ks.effective_rank == pytest.approx(lam.sum(), rel=1e-10)
    assert ks.top10_share == pytest.approx(lam[:10].sum() / lam.sum(), rel=1e-10)
    assert ks.ratio(10) == pytest.approx(0.01, rel=1e-8)
    assert math.isnan(ks.ratio(1000))
    assert set(ks.row()) >= {"kappa", "lambda_max", "lambda_min", "decay_exponent"}
    with pytest.raises(ConfigError):
        kernel_spectrum(torch.ones(2, 3))


def test_ntk_spectra_attention_is_worse_conditioned():
    x = prescribed_spectrum(
        geometric_singular_values(1e2, 6), 40, 6, torch.Generator().manual_seed(1)
    ).abs()
    out = ntk_spectra(x)
    raw, att = out["ntk_raw"], out["ntk_attn"]
    for ks in (raw, att):
        assert ks.eigenvalues.min() > -1e-10  # PSD
        assert ks.eigenvalues.sum() == pytest.approx(40 * 0.5, rel=1e-7)  # trace: Θ∞(x, x) = 1/2
    # attention squeezes the inputs toward the top directions: more energy in fewer eigenvalues
    assert att.top10_share > raw.top10_share


def test_sweep_resolves_small_kappa_and_breaks_large():
    rows = synthetic_sweep([10.0, 1e3, 1e7, 1e12], n=24, d=8, seed=0)
    small = [r for r in rows if r.kappa <= 1e3]
    assert all(r.rel_err_direct < 1e-8 for r in small)
    assert all(r.rel_err_cubed < 1e-8 for r in small)
    big = rows[-1]
    assert big.rel_err_direct > 0.5  # κ(G³) = 1e36 is beyond float64
    assert big.rel_err_cubed < 1e-6  # while κ(G)³ from σ(X) is still fine
    assert big.rel_err_qr < 1e-2  # and so is σ(R C): the loss is in materialising GX
    naive = rows[2]
    assert naive.rel_err_eigh > 0.5 and naive.rel_err_direct < 1e-3  # SVD of GX beats eigh(G³)
    assert first_unresolved(rows) == 1e12
    assert first_unresolved(rows, "rel_err_eigh") == 1e7


def test_sweep_csv(tmp_path):
    rows = synthetic_sweep([10.0, 100.0], n=10, d=4)
    p = write_sweep_csv(rows, tmp_path / "sweep.csv")
    back = list(csv.DictReader(p.open()))
    assert len(back) == 2 and float(back[1]["kappa"]) == 100.0
    assert float(back[1]["kappa_G3_direct"]) == pytest.approx(1e6, rel=1e-8)
    with pytest.raises(ConfigError):
        synthetic_sweep([10.0], n=3, d=4)
    with pytest.raises(ConfigError):
        geometric_singular_values(0.5, 3)
