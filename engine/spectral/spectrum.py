"""Gram spectra and condition numbers (docs/claims.md#claim-2, docs/protocol.md#spectra).

Everything is computed from singular values in float64, never by eigendecomposing
an explicitly formed Gram matrix:

* G = X Xᵀ: λ_i(G) = σ_i(X)², so eigenvalues down to ~eps² ≈ 1e-31 of the largest
  are resolved (an eigendecomposition of G itself stops at ~eps ≈ 1e-16).
* G³: the attention output is GX = X Xᵀ X = X C with C = XᵀX [d, d] (the n×n G is
  never formed), and (GX)(GX)ᵀ = G³, so λ_i(G³) = σ_i(X C)². That SVD sees the
  cubed condition number on purpose: it is what the attention-transformed data
  really looks like in floating point, so the user sees κ(G³) = κ(G)³ hold, or
  where float64 breaks it (``engine.spectral.synthetic.synthetic_sweep``: measured
  to hold to ~1e-2 up to κ(G) ≈ 1e10; MNIST's κ(G) ≈ 1e11–1e13 at the default
  tolerance is past that, and ``Spectrum.cube_rel_error`` says so).

Tolerance convention: ``rtol`` applies to **eigenvalues** λ of G, relative to λ_max.
The default (max(n, d)·eps)² is the usual singular-value rank rule
σ_i > max(n, d)·eps·σ_max (``numpy.linalg.matrix_rank``) written in λ = σ².
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from engine.errors import ConfigError
from engine.spectral.thresholds import WidthThresholds, width_thresholds

EPS64 = float(np.finfo(np.float64).eps)


def default_rtol(n: int, d: int) -> float:
    """(max(n, d)·eps_float64)²: the λ-tolerance equivalent to σ > max(n, d)·eps·σ_max."""
    return (max(int(n), int(d)) * EPS64) ** 2


def _as_float64(x: torch.Tensor | np.ndarray) -> torch.Tensor:
    t = torch.as_tensor(x)
    if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] < 1:
        raise ConfigError("x", tuple(t.shape), "a non-empty [n, d] matrix")
    t = t.to(torch.float64)
    if not bool(torch.isfinite(t).all()):
        raise ConfigError("x", "non-finite entries", "a finite [n, d] matrix")
    return t


def numerical_rank(eigenvalues: np.ndarray, rtol: float) -> int:
    """Count of eigenvalues [k] (any order, ≥ 0) above ``rtol``·λ_max."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    if lam.size == 0:
        return 0
    top = float(lam.max())
    if top <= 0:
        return 0
    return int(np.count_nonzero(lam > rtol * top))


@dataclass(frozen=True)
class Spectrum:
    """Spectrum of G = X Xᵀ and of the attention kernel G³ for one data matrix X [n, d].

    Eigenvalue arrays have length min(n, d), descending, float64 on the CPU; those
    past ``rank`` are numerically zero (kept for log-scale plots of the floor).
    """

    n: int
    """Rows (samples) of X."""
    d: int
    """Columns (features) of X."""
    rank: int
    """Numerical rank of G: eigenvalues above ``rtol``·λ_max."""
    rtol: float
    """Tolerance on λ relative to λ_max (not on σ)."""
    eig_G: np.ndarray
    """λ_i(G) = σ_i(X)², [min(n, d)]."""
    eig_G3: np.ndarray
    """λ_i(G³) = σ_i(X XᵀX)², computed directly from the attention output, [min(n, d)]."""
    kappa_G: float
    """κ(G) = λ_1/λ_rank over the numerical rank (inf when rank is 0)."""
    kappa_G_cubed: float
    """κ(G)³, what Theorem 4.7 predicts for κ(G³)."""
    kappa_G3_direct: float
    """λ_1(G³)/λ_rank(G³) from the SVD of GX, over the same rank as G."""
    kappa_d: float
    """λ_1/λ_min(n,d): condition number of the rank-min(n, d) truncation; inf when the
    numerical rank is below min(n, d) (dead pixels, duplicated rows)."""
    thresholds: WidthThresholds
    """Width thresholds κ⁶, κ_d⁶ n ln n and the ReLU counterparts."""

    @property
    def cube_rel_error(self) -> float:
        """|κ(G³)_direct − κ(G)³| / κ(G)³: 0 when float64 resolves the theorem."""
        if not math.isfinite(self.kappa_G_cubed) or self.kappa_G_cubed == 0:
            return math.nan
        return abs(self.kappa_G3_direct - self.kappa_G_cubed) / self.kappa_G_cubed

    @property
    def width_threshold_v1(self) -> float:
        return self.thresholds.v1

    @property
    def width_threshold_v2(self) -> float:
        return self.thresholds.v2

    def kappa_at(self, rtol: float) -> tuple[int, float]:
        """(rank, κ(G)) for another λ-tolerance, without recomputing the SVD."""
        r = numerical_rank(self.eig_G, rtol)
        return r, (float(self.eig_G[0] / self.eig_G[r - 1]) if r else math.inf)

    def top(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The top ``k`` eigenvalues of G and G³ (for plots)."""
        return self.eig_G[:k].copy(), self.eig_G3[:k].copy()

    def row(self, dataset: str) -> dict[str, float | int | str]:
        """The ``spectrum`` table row (docs/architecture.md#run-directory column names, in order)."""
        return {
            "dataset": dataset,
            "n": self.n,
            "d": self.d,
            "rank": self.rank,
            "rtol": self.rtol,
            "kappa_G": self.kappa_G,
            "kappa_G_cubed": self.kappa_G_cubed,
            "kappa_G3_direct": self.kappa_G3_direct,
            "kappa_d": self.kappa_d,
            "width_threshold_v1": self.thresholds.v1,
            "width_threshold_v2": self.thresholds.v2,
        }


def gram_eigenvalues(x: torch.Tensor | np.ndarray) -> np.ndarray:
    """λ(G) for G = X Xᵀ as σ(X)² in float64. x [n, d] → [min(n, d)], descending."""
    s = torch.linalg.svdvals(_as_float64(x))
    return (s * s).cpu().numpy()


def attention_output(x: torch.Tensor | np.ndarray) -> torch.Tensor:
    """GX = X XᵀX = X C with C = XᵀX [d, d], float64. x [n, d] → [n, d].

    Never forms the n×n G: cost O(n d²) instead of O(n² d).
    """
    x64 = _as_float64(x)
    return x64 @ (x64.T @ x64)


def cubed_gram_eigenvalues(x: torch.Tensor | np.ndarray) -> np.ndarray:
    """λ(G³) as σ(GX)² in float64 (directly, not as λ(G)³). x [n, d] → [min(n, d)]."""
    s = torch.linalg.svdvals(attention_output(x))
    return (s * s).cpu().numpy()


def gram_spectra(x: torch.Tensor | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(σ(X)², σ(GX)²) in float64 for x [n, d]: the two spectra ``spectrum`` uses.

    GX is materialised as the attention computes it (X @ C), so its rounding is part of
    what is measured; ``synthetic_sweep`` shows where that starts to matter.
    """
    x64 = _as_float64(x)
    s = torch.linalg.svdvals(x64)
    s3 = torch.linalg.svdvals(attention_output(x64))
    return (s * s).cpu().numpy(), (s3 * s3).cpu().numpy()


def spectrum(x: torch.Tensor | np.ndarray, *, rtol: float | None = None) -> Spectrum:
    """Spectrum of G = X Xᵀ and G³ for the rows of ``x`` [n, d] (as given: normalise first).

    ``rtol``: eigenvalue tolerance relative to λ_max for the numerical rank; default
    ``default_rtol(n, d)`` = (max(n, d)·eps)². Runs on the device of ``x`` in float64.
    """
    x64 = _as_float64(x)
    n, d = (int(v) for v in x64.shape)
    if rtol is None:
        rtol = default_rtol(n, d)
    elif not (isinstance(rtol, (int, float)) and 0 < rtol < 1):
        raise ConfigError("rtol", rtol, "a number in (0, 1) relative to λ_max, e.g. 1e-10")
    eig_g, eig_g3 = gram_spectra(x64)
    r = numerical_rank(eig_g, float(rtol))
    k = min(n, d)
    if r == 0:
        kappa, kappa3, kappa_d = math.inf, math.inf, math.inf
    else:
        kappa = float(eig_g[0] / eig_g[r - 1])
        # Same index set as G: G³ shares G's eigenvectors, so κ(G³) is λ_1³/λ_r³ in exact
        # arithmetic; a zero here means float64 lost the r-th direction entirely.
        low = float(eig_g3[r - 1])
        kappa3 = float(eig_g3[0] / low) if low > 0 else math.inf
        kappa_d = float(eig_g[0] / eig_g[k - 1]) if r == k else math.inf
    return Spectrum(
        n=n,
        d=d,
        rank=r,
        rtol=float(rtol),
        eig_G=eig_g,
        eig_G3=eig_g3,
        kappa_G=kappa,
        kappa_G_cubed=kappa**3,
        kappa_G3_direct=kappa3,
        kappa_d=kappa_d,
        thresholds=width_thresholds(kappa, kappa_d, n),
    )
