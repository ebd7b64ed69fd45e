"""Distances of docs/protocol.md#ntk: predictor distance and relative kernel distance."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.errors import ConfigError


@dataclass(frozen=True)
class NTKDistance:
    """‖f_m − f_NTK‖₂ over the test points, and the same divided by ‖f_NTK‖₂."""

    absolute: float
    """ℓ2 (Frobenius for multi-output) norm of f_m − f_NTK."""
    relative: float
    """absolute / ‖f_NTK‖ (inf when f_NTK = 0)."""


def ntk_distance(f_m: torch.Tensor, f_ntk: torch.Tensor) -> NTKDistance:
    """f_m, f_ntk [n_test] or [n_test, K] (same shape; a trailing 1 is squeezed)."""
    a = f_m.reshape(f_m.shape[0], -1).double()
    b = f_ntk.reshape(f_ntk.shape[0], -1).to(a.device, torch.float64)
    if a.shape != b.shape:
        raise ConfigError("f_ntk", tuple(f_ntk.shape), f"the shape of f_m {tuple(f_m.shape)}")
    diff = float(torch.linalg.norm(a - b))
    ref = float(torch.linalg.norm(b))
    return NTKDistance(diff, diff / ref if ref > 0 else float("inf"))


def kernel_distance(theta_a: torch.Tensor, theta_b: torch.Tensor) -> float:
    """‖Θa − Θb‖_F / ‖Θb‖_F (any equal shapes; Θb is the reference, e.g. Θ∞ or Θ_0)."""
    if theta_a.shape != theta_b.shape:
        raise ConfigError("theta_a", tuple(theta_a.shape), f"the shape {tuple(theta_b.shape)}")
    a = theta_a.double()
    b = theta_b.to(a.device, torch.float64)
    ref = float(torch.linalg.norm(b))
    diff = float(torch.linalg.norm(a - b))
    return diff / ref if ref > 0 else float("inf")
