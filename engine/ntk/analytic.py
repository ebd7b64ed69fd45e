"""Infinite-width NTK Θ∞ of the two-layer ReLU network (docs/protocol.md#ntk).

For f_k(x) = m^{-1/2} Σ_r a_rk ReLU(w_rᵀx), w_r ~ N(0, σ_w² I), a_rk = ±1:

* first-layer gradients (the paper's NTK): Θ∞(x, x') = ⟨x, x'⟩ (π − θ)/(2π), θ the
  angle between x and x' (arc-cosine kernel of order 0 times ⟨x, x'⟩); independent of
  σ_w because only the sign pattern of wᵀx enters;
* output-layer gradients (when ``train_output``): the NNGP / arc-cosine order-1 term
  E[ReLU(wᵀx) ReLU(wᵀx')] = σ_w² ‖x‖‖x'‖ (sin θ + (π − θ) cos θ)/(2π).

With K outputs the kernel is Θ∞ ⊗ I_K (E[a_rk a_rl] = δ_kl), so every function here
returns the single per-output block [n1, n2].
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

_EPS = 1e-30


def _pair(x1: torch.Tensor, x2: torch.Tensor | None) -> torch.Tensor:
    return x1 if x2 is None else x2


def analytic_ntk(x1: torch.Tensor, x2: torch.Tensor | None = None) -> torch.Tensor:
    """Θ∞ for unit-norm rows: c (π − arccos c)/(2π) with c = ⟨x, x'⟩ clamped to [−1, 1].

    x1 [n1, d], x2 [n2, d] (default x1) → [n1, n2], in the dtype/device of x1. Rows
    are *assumed* unit-norm (use ``analytic_ntk_general`` otherwise).
    """
    x2 = _pair(x1, x2)
    return _angular(x1 @ x2.T, None, x1, x2)


def _angular(
    g: torch.Tensor, cos: torch.Tensor | None, x1: torch.Tensor, x2: torch.Tensor
) -> torch.Tensor:
    """g ⊙ (π − arccos cos)/(2π) (cos = g when None), in place when no grad is needed.

    The in-place chain (4 passes, one temporary) saves several n1×n2 passes, which dominate at n = 4096.
    """
    if torch.is_grad_enabled() and (x1.requires_grad or x2.requires_grad):
        c = g if cos is None else cos
        return g * (math.pi - torch.arccos(c.clamp(-1.0, 1.0))) * (1.0 / (2.0 * math.pi))
    out = g.clamp(-1.0, 1.0) if cos is None else cos
    out.arccos_()
    # (π − θ)/(2π) = 1/2 − θ/(2π) in one pass, then ⊙ g
    torch.add(out.new_tensor(0.5), out, alpha=-1.0 / (2.0 * math.pi), out=out)
    return out.mul_(g)


def _cosine(x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """⟨x, x'⟩ [n1, n2] and the cosine of the angle, clamped (zero rows: cosine 0)."""
    g = x1 @ x2.T
    n1 = x1.norm(dim=1).clamp_min(_EPS)
    n2 = x2.norm(dim=1).clamp_min(_EPS)
    cos = (g / n1[:, None] / n2[None, :]).clamp(-1.0, 1.0)
    return g, cos


def analytic_ntk_general(x1: torch.Tensor, x2: torch.Tensor | None = None) -> torch.Tensor:
    """Θ∞ for rows of any norm: ⟨x, x'⟩ · (π − θ)/(2π), θ = angle(x, x').

    Equals ``analytic_ntk`` on unit rows and is bilinear in the norms:
    Θ∞(αx, βx') = αβ Θ∞(x, x') for α, β > 0. x1 [n1, d], x2 [n2, d] → [n1, n2].
    """
    x2 = _pair(x1, x2)
    g, cos = _cosine(x1, x2)
    return _angular(g, cos, x1, x2)


def nngp_relu(
    x1: torch.Tensor, x2: torch.Tensor | None = None, *, sigma_w: float = 1.0
) -> torch.Tensor:
    """E_w[ReLU(wᵀx) ReLU(wᵀx')] for w ~ N(0, σ_w² I) (arc-cosine kernel of order 1).

    = σ_w² ‖x‖‖x'‖ (sin θ + (π − θ) cos θ)/(2π). x1 [n1, d], x2 [n2, d] → [n1, n2].
    This is the output-layer part of the NTK of a network that trains a.
    """
    x2 = _pair(x1, x2)
    _, cos = _cosine(x1, x2)
    theta = torch.arccos(cos)
    norms = x1.norm(dim=1)[:, None] * x2.norm(dim=1)[None, :]
    sin = torch.sqrt((1.0 - cos * cos).clamp_min(0.0))
    return (sigma_w**2 / (2.0 * math.pi)) * norms * (sin + (math.pi - theta) * cos)


def analytic_ntk_with_output(
    x1: torch.Tensor, x2: torch.Tensor | None = None, *, sigma_w: float = 1.0
) -> torch.Tensor:
    """Θ∞ of a network that trains both layers: first-layer NTK + σ_w²-scaled NNGP term."""
    return analytic_ntk_general(x1, x2) + nngp_relu(x1, x2, sigma_w=sigma_w)


def analytic_ntk_for(
    model: nn.Module, x1: torch.Tensor, x2: torch.Tensor | None = None
) -> torch.Tensor:
    """Θ∞ of ``model`` (TwoLayerNet or MLPAttn) on raw inputs x1 [n1, d], x2 [n2, d].

    Applies ``model.features`` (x/‖x‖, or Cx/‖Cx‖ for MLP-Attn) first, so for MLP-Attn
    this is the same kernel on the attention-transformed inputs. Adds the NNGP term
    when ``model.head.train_output`` (with σ_w = ``model.head.sigma_w``); omits the
    first-layer term if the first layer is frozen. Returns the per-output block
    [n1, n2] (the full kernel is this ⊗ I_K), in the dtype of x1.
    """
    head: Any = model.head  # nn.Module attributes are dynamic; typed loosely on purpose
    features: Any = model.features
    with torch.no_grad():
        f1 = features(x1.to(head.weight.device, head.weight.dtype)).to(x1.dtype)
        f2 = (
            None
            if x2 is None
            else features(x2.to(head.weight.device, head.weight.dtype)).to(x1.dtype)
        )
    out = torch.zeros((), dtype=x1.dtype, device=f1.device)
    if head.weight.requires_grad:
        out = out + analytic_ntk_general(f1, f2)
    if isinstance(head.output, nn.Parameter) and head.output.requires_grad:
        out = out + nngp_relu(f1, f2, sigma_w=head.sigma_w)
    if out.ndim == 0:
        out = out.expand(f1.shape[0], (f1 if f2 is None else f2).shape[0]).clone()
    return out
