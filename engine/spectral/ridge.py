"""Kernel ridge for many targets at once (the kernel study of docs/protocol.md#spectra, claim 5).

The spectrum experiment fits every target (top / bottom eigen-targets, clean and
noisy, the labels: about 14 columns) with every kernel at a few relative ridges ρ.
The targets share the kernel, so for each ρ one Cholesky factorisation of
K + ρ·tr(K)/n·I (n³/3 flops) solves all columns at once. That is the cheapest
exact route for a handful of ridges: a full eigendecomposition (≈ 9n³ flops with
vectors, and memory-bound on CPUs) only pays off past ≈ 25 ridges per kernel.
Measured on 2 CPU cores at n = 3000 (float64): Cholesky 0.7 s, eigvalsh 8 s,
eigh with vectors 40–77 s (``benchmarks/bench_spectrum.py --study``).
"""

from __future__ import annotations

import torch

from engine.errors import ConfigError


def as_columns(y: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """y [n] or [n, c] → [n, c] with ``like``'s dtype and device."""
    return y.reshape(y.shape[0], -1).to(like)


def ridge_scale(k: torch.Tensor) -> float:
    """tr(K)/n: the unit of the relative ridge ρ (absolute λ = ρ·tr(K)/n)."""
    return float(torch.diagonal(k).sum()) / int(k.shape[0])


def ridge_solve(k: torch.Tensor, y: torch.Tensor, ridges: tuple[float, ...]) -> list[torch.Tensor]:
    """[(K + ρ·tr(K)/n·I)⁻¹ Y for ρ in ``ridges``]: K [n, n] symmetric PSD, Y [n, c] → [n, c] each.

    One Cholesky per ρ shared by every column of Y; float64 throughout. A factorisation
    that fails (K far from PSD, ρ too small to fix it) falls back to a symmetric solve.
    """
    if k.ndim != 2 or k.shape[0] != k.shape[1] or k.shape[0] < 1:
        raise ConfigError("kernel", tuple(k.shape), "a non-empty square [n, n] matrix")
    k64 = k.to(torch.float64)
    ks = (k64 + k64.T) / 2
    y64 = as_columns(y, k64)
    scale = ridge_scale(k64)
    eye = torch.eye(k64.shape[0], dtype=k64.dtype, device=k64.device)
    out = []
    for rho in ridges:
        if not rho > 0:
            raise ConfigError("ridge", rho, "a positive relative ridge, e.g. 1e-3")
        a = ks + (rho * scale) * eye
        chol, info = torch.linalg.cholesky_ex(a)
        if int(info) == 0:
            out.append(torch.cholesky_solve(y64, chol))
        else:
            out.append(torch.linalg.solve(a, y64))
        del a, chol
    return out


__all__ = ["as_columns", "ridge_scale", "ridge_solve"]
