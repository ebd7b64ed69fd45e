"""spectrum(): known spectra, κ(G³) = κ³, rank detection, tolerance convention."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.errors import ConfigError
from engine.spectral import (
    attention_output,
    default_rtol,
    geometric_singular_values,
    numerical_rank,
    prescribed_spectrum,
    spectrum,
)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_diagonal_construction_known_eigenvalues():
    s = torch.tensor([3.0, 2.0, 1.0, 0.5], dtype=torch.float64)
    x = torch.zeros(6, 4, dtype=torch.float64)
    x[[0, 1, 2, 3], [2, 0, 3, 1]] = s  # permuted diagonal: order must not matter
    sp = spectrum(x)
    np.testing.assert_allclose(sp.eig_G, s.numpy() ** 2, rtol=1e-14)
    np.testing.assert_allclose(sp.eig_G3, s.numpy() ** 6, rtol=1e-13)
    assert sp.rank == 4 and sp.n == 6 and sp.d == 4
    assert sp.kappa_G == pytest.approx(36.0, rel=1e-14)
    assert sp.kappa_d == pytest.approx(36.0, rel=1e-14)
    assert sp.kappa_G_cubed == pytest.approx(36.0**3, rel=1e-13)
    assert sp.kappa_G3_direct == pytest.approx(36.0**3, rel=1e-12)
    assert sp.thresholds.v1 == pytest.approx(36.0**6, rel=1e-12)


@pytest.mark.parametrize("kappa", [10.0, 1e2, 1e3])
def test_orthogonal_construction_cube_law(kappa):
    x = prescribed_spectrum(geometric_singular_values(kappa, 12), 40, 12, _gen(1))
    sp = spectrum(x)
    assert sp.rank == 12
    assert sp.kappa_G == pytest.approx(kappa, rel=1e-10)
    assert sp.kappa_d == pytest.approx(kappa, rel=1e-10)
    # the theorem, measured directly from the attention output GX
    assert abs(sp.kappa_G3_direct / kappa**3 - 1) < 1e-8
    assert sp.cube_rel_error < 1e-8


def test_cube_law_on_engine_data_synthetic():
    data = pytest.importorskip("engine.data.synthetic")
    syn = data.make_synthetic(30, 10, kappa=500.0, seed=3)
    sp = spectrum(syn.x)
    assert sp.kappa_G == pytest.approx(500.0, rel=1e-10)
    assert abs(sp.kappa_G3_direct / 500.0**3 - 1) < 1e-8


def test_matches_explicit_gram_eigendecomposition():
    # two independent methods on a well-conditioned matrix: SVD of X / GX vs eigh of G / G³
    x = torch.randn(15, 8, generator=_gen(2), dtype=torch.float64)
    sp = spectrum(x)
    g = x @ x.T
    lam = np.sort(np.linalg.eigvalsh(g.numpy()))[::-1][:8]
    lam3 = np.sort(np.linalg.eigvalsh((g @ g @ g).numpy()))[::-1][:8]
    np.testing.assert_allclose(sp.eig_G, lam, rtol=1e-10)
    np.testing.assert_allclose(sp.eig_G3, lam3, rtol=1e-9)
    np.testing.assert_allclose(attention_output(x).numpy(), (g @ x).numpy(), rtol=1e-12, atol=1e-12)


def test_dead_pixels_lower_rank_and_kappa_d_is_infinite():
    x = torch.rand(50, 20, generator=_gen(4), dtype=torch.float64)
    dead = [0, 7, 19]
    x[:, dead] = 0.0
    sp = spectrum(x)
    assert sp.rank == 17
    assert math.isinf(sp.kappa_d)
    live = np.delete(x.numpy(), dead, axis=1)
    s = np.linalg.svd(live, compute_uv=False)
    assert sp.kappa_G == pytest.approx((s[0] / s[-1]) ** 2, rel=1e-10)
    assert abs(sp.kappa_G3_direct / sp.kappa_G**3 - 1) < 1e-8
    # v2 falls back to κ over the numerical rank
    assert sp.thresholds.v2_kappa == "kappa"
    assert sp.thresholds.v2 == pytest.approx(sp.kappa_G**6 * 50 * math.log(50), rel=1e-12)


def test_wide_matrix_rank_is_n():
    x = torch.randn(5, 30, generator=_gen(5), dtype=torch.float64)
    sp = spectrum(x)
    assert sp.rank == 5 and sp.eig_G.shape == (5,)
    assert sp.kappa_d == pytest.approx(sp.kappa_G, rel=1e-14)
    assert sp.thresholds.v2_kappa == "kappa_d"


def test_rtol_applies_to_eigenvalues_not_singular_values():
    # λ ratios 1, 1e-4, 1e-9 (σ ratios 1, 1e-2, 10^-4.5)
    s = torch.tensor([1.0, 1e-2, 10**-4.5], dtype=torch.float64)
    x = prescribed_spectrum(s, 10, 3, _gen(6))
    assert spectrum(x, rtol=1e-6).rank == 2  # 1e-9 < 1e-6 on λ (σ-rule would keep it)
    assert spectrum(x, rtol=1e-10).rank == 3
    sp = spectrum(x)
    assert sp.rtol == pytest.approx((10 * np.finfo(np.float64).eps) ** 2)
    assert sp.rank == 3
    assert sp.kappa_at(1e-6) == (2, pytest.approx(1e4, rel=1e-10))


def test_default_rtol_is_the_sigma_rule_squared():
    eps = np.finfo(np.float64).eps
    assert default_rtol(100, 7) == pytest.approx((100 * eps) ** 2)
    # σ just above / below max(n, d)·eps·σ_max
    lam = np.array([1.0, (2 * 100 * eps) ** 2, (0.5 * 100 * eps) ** 2])
    assert numerical_rank(lam, default_rtol(100, 7)) == 2


def test_float32_input_runs_in_float64_and_row_layout():
    x = torch.randn(12, 6, generator=_gen(7))
    sp = spectrum(x)
    assert sp.eig_G.dtype == np.float64
    row = sp.row("toy")
    assert list(row) == [
        "dataset", "n", "d", "rank", "rtol", "kappa_G", "kappa_G_cubed", "kappa_G3_direct",
        "kappa_d", "width_threshold_v1", "width_threshold_v2",
    ]  # fmt: skip
    top_g, top_g3 = sp.top(3)
    np.testing.assert_array_equal(top_g, sp.eig_G[:3])
    assert top_g3.shape == (3,)


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-3, float("nan")])
def test_bad_rtol_raises(bad):
    with pytest.raises(ConfigError):
        spectrum(torch.eye(3, dtype=torch.float64), rtol=bad)


def test_bad_shape_and_zero_matrix():
    with pytest.raises(ConfigError):
        spectrum(torch.ones(3))
    sp = spectrum(torch.zeros(4, 3, dtype=torch.float64))
    assert sp.rank == 0 and math.isinf(sp.kappa_G)


def test_real_mnist_dead_pixels(shared_data):
    import gzip

    raw = gzip.open(shared_data / "mnist" / "t10k-images-idx3-ubyte.gz").read()
    x = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 784)[:1500].astype(np.float64) / 255
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    sp = spectrum(torch.from_numpy(x))
    dead = int((x == 0).all(0).sum())
    assert dead > 50  # MNIST has many always-zero border pixels
    assert sp.rank <= 784 - dead
    assert math.isinf(sp.kappa_d)
    assert sp.kappa_G > 1e3 and math.isfinite(sp.kappa_G)
