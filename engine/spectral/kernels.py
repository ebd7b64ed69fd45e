"""Spectra of the kernels the models see: Θ∞ on raw vs attention-transformed inputs.

2L-ReLU's infinite-width NTK acts on x̃ = x/‖x‖, MLP-Attn's on x̃ = Cx/‖Cx‖ with
C = XᵀX of the unit-norm training rows (``engine.models.LinearizedAttention``).
Θ∞ (docs/protocol.md#ntk) comes from ``engine.ntk.analytic_ntk``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from engine.errors import ConfigError
from engine.models import LinearizedAttention, normalize_rows
from engine.spectral.spectrum import EPS64, numerical_rank


def _theta_inf(x1: torch.Tensor, x2: torch.Tensor | None = None) -> torch.Tensor:
    """Θ∞ for unit-norm rows, x1 [n1, d], x2 [n2, d] → [n1, n2] (``engine.ntk.analytic_ntk``).

    Imported lazily so that ``engine.spectral`` loads without pulling in the NTK package.
    """
    from engine.ntk import analytic_ntk

    return analytic_ntk(x1, x2)


def attention_features(x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
    """x̃ = Cx̂/‖Cx̂‖ with C from ``context`` [n, d] (unit-normalised rows). x [k, d] → [k, d]."""
    att = LinearizedAttention(context.to(torch.float64)).to(context.device)
    with torch.no_grad():
        return att(x.to(context.device, torch.float64))


@dataclass(frozen=True)
class KernelSpectrum:
    """Eigenvalues and decay summaries of one symmetric PSD kernel matrix K [n, n]."""

    eigenvalues: np.ndarray
    """λ(K) descending, float64 [n] (tiny negatives from rounding kept as they are)."""
    rank: int
    """Eigenvalues above ``rtol``·λ_max."""
    rtol: float
    """Relative λ tolerance (default n·eps: K is eigendecomposed directly here)."""
    kappa: float
    """λ_1/λ_rank."""
    top10_share: float
    """Σ of the top 10 eigenvalues / trace."""
    effective_rank: float
    """trace / λ_max."""
    decay_exponent: float
    """−slope of log λ_k against log k, k = 1 … min(rank, 100): λ_k ∝ k^(−p)."""

    def ratio(self, k: int) -> float:
        """λ_k / λ_1 (1-based k), NaN past n."""
        if k < 1 or k > self.eigenvalues.size:
            return math.nan
        return float(self.eigenvalues[k - 1] / self.eigenvalues[0])

    def row(self) -> dict[str, float | int]:
        return {
            "n": int(self.eigenvalues.size),
            "rank": self.rank,
            "rtol": self.rtol,
            "kappa": self.kappa,
            "lambda_max": float(self.eigenvalues[0]),
            "lambda_min": float(self.eigenvalues[self.rank - 1]) if self.rank else math.nan,
            "top10_share": self.top10_share,
            "effective_rank": self.effective_rank,
            "eig_ratio_10": self.ratio(10),
            "eig_ratio_100": self.ratio(100),
            "decay_exponent": self.decay_exponent,
        }


def kernel_spectrum(k: torch.Tensor, *, rtol: float | None = None) -> KernelSpectrum:
    """Spectrum of a symmetric kernel matrix ``k`` [n, n] (float64 eigvalsh on its device)."""
    if k.ndim != 2 or k.shape[0] != k.shape[1] or k.shape[0] < 1:
        raise ConfigError("kernel", tuple(k.shape), "a non-empty square [n, n] matrix")
    k64 = k.to(torch.float64)
    lam = torch.linalg.eigvalsh((k64 + k64.T) / 2).flip(0).cpu().numpy()
    n = lam.size
    rtol = n * EPS64 if rtol is None else float(rtol)
    r = numerical_rank(lam, rtol)
    kappa = float(lam[0] / lam[r - 1]) if r else math.inf
    trace = float(np.clip(lam, 0, None).sum())
    m = min(r, 100)
    if m >= 2:
        kk = np.arange(1, m + 1, dtype=np.float64)
        slope = np.polyfit(np.log(kk), np.log(lam[:m]), 1)[0]
        decay = float(-slope)
    else:
        decay = math.nan
    return KernelSpectrum(
        eigenvalues=lam,
        rank=r,
        rtol=rtol,
        kappa=kappa,
        top10_share=float(np.clip(lam[:10], 0, None).sum() / trace) if trace > 0 else math.nan,
        effective_rank=trace / float(lam[0]) if lam[0] > 0 else math.nan,
        decay_exponent=decay,
    )


def ntk_spectra(x_train: torch.Tensor, *, rtol: float | None = None) -> dict[str, KernelSpectrum]:
    """Θ∞ spectra on the training rows ``x_train`` [n, d]: raw (x/‖x‖) vs attention (Cx/‖Cx‖).

    Returns {"ntk_raw": ..., "ntk_attn": ...}.
    """
    x = normalize_rows(x_train.to(torch.float64))
    xa = attention_features(x, x)
    return {
        "ntk_raw": kernel_spectrum(_theta_inf(x), rtol=rtol),
        "ntk_attn": kernel_spectrum(_theta_inf(xa), rtol=rtol),
    }
