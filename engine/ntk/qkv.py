"""Exact empirical NTK of QKV-Attn over all its trainable parameters, without a Jacobian.

f_k(x) = m^{-1/2} Σ_r a_rk ReLU(w_rᵀ z),  z = u/‖u‖,  u = q M,  q = x̂ W_Q,
M = W_Kᵀ C W_V (``engine.models.qkv``). Every parameter gradient of f_k is an outer
product, so each block of Θ is a Hadamard product of two small Gram matrices:

* head W (and a): the structured two-layer kernel on the features z (``structured_ntk``);
* with g_k = ∂f_k/∂z = m^{-1/2} Σ_r a_rk 1[w_rᵀz > 0] w_r  [n, d_k] and
  v_k = ∂f_k/∂u = (g_k − (g_k·z) z)/‖u‖  [n, d_k]:
  - ∂f_k/∂W_Q = x̂ ⊗ (v_k Mᵀ)        → Θ_Q = (X̂X̂'ᵀ) ⊙ ((V_k Mᵀ)(V'_l Mᵀ)ᵀ)
  - ∂f_k/∂W_K = (v_k (C W_V)ᵀ) ⊗ q  → Θ_K = ((V_k Pᵀ)(V'_l Pᵀ)ᵀ) ⊙ (QQ'ᵀ),  P = C W_V
  - ∂f_k/∂W_V = r ⊗ v_k, r = q W_Kᵀ C → Θ_V = (RR'ᵀ) ⊙ (V_k V'_lᵀ)

Cost O(n1 n2 (d + d_k) K²) plus O(n m d_k K) for g; memory O(n1 n2 + n (d + m_block)).
``tests/engine/ntk/test_qkv_ntk.py`` checks it against torch.func Jacobians (float64).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from engine.errors import ConfigError
from engine.models.two_layer import normalize_rows


def has_qkv_structure(model: nn.Module) -> bool:
    """Whether ``qkv_ntk`` applies: a QKV attention with trainable w_q, w_k, w_v (and C),
    a two-layer ``head`` (weight, output), and no trainable parameter outside them.
    (With frozen projections the head-only closed form ``structured_ntk`` applies.)"""
    att = getattr(model, "attention", None)
    head = getattr(model, "head", None)
    names = ("w_q", "w_k", "w_v", "C")
    if (
        att is None
        or head is None
        or not all(isinstance(getattr(att, n, None), torch.Tensor) for n in names)
    ):
        return False
    if not (
        isinstance(getattr(head, "weight", None), torch.Tensor)
        and isinstance(getattr(head, "output", None), torch.Tensor)
    ):
        return False
    if not all(bool(getattr(att, n).requires_grad) for n in names[:3]):
        return False
    own = {id(att.w_q), id(att.w_k), id(att.w_v), id(head.weight), id(head.output)}
    return all(id(p) in own for p in model.parameters() if p.requires_grad)


def _parts(model: Any, x: torch.Tensor, sub: torch.Tensor, block: int) -> dict[str, torch.Tensor]:
    """Per-sample factors of the attention gradients for the outputs in ``sub`` [m, K].

    Returns xh [n, d], q [n, d_k], r [n, d] and, per output k, A_Q[k] = V_k Mᵀ,
    A_K[k] = V_k Pᵀ, V[k] (stacked as [K, n, ·]).
    """
    att, head = model.attention, model.head
    w, m = head.weight, head.weight.shape[0]
    xh = normalize_rows(x)
    q = xh @ att.w_q
    p = att.C @ att.w_v  # [d, d_k]
    mix = att.w_k.T @ p  # M [d_k, d_k]
    u = q @ mix
    nu = u.norm(dim=1, keepdim=True).clamp_min(1e-300)
    z = u / nu
    kk = sub.shape[1]
    g = torch.zeros(kk, x.shape[0], w.shape[1], dtype=w.dtype, device=w.device)
    for lo in range(0, m, block):
        hi = min(lo + block, m)
        d = (z @ w[lo:hi].T > 0).to(w.dtype)  # [n, b]
        for k in range(kk):
            g[k].addmm_(d * sub[lo:hi, k], w[lo:hi])
    g.mul_(1.0 / math.sqrt(m))
    v = (g - (g * z).sum(-1, keepdim=True) * z) / nu  # [K, n, d_k]
    r = (q @ att.w_k.T) @ att.C  # [n, d]
    return {"xh": xh, "q": q, "r": r, "aq": v @ mix.T, "ak": v @ p.T, "v": v}


def qkv_attention_ntk(
    model: nn.Module,
    x1: torch.Tensor,
    x2: torch.Tensor | None = None,
    *,
    block_size: int = 4096,
    output: int | None = None,
) -> torch.Tensor:
    """The W_Q, W_K, W_V part of Θ: [n1, n2] (one output or ``output``) or [n1, n2, K, K]."""
    mod: Any = model
    a = mod.head.output.detach()
    n_out = a.shape[1]
    if output is not None and not (0 <= int(output) < n_out):
        raise ConfigError("output", output, f"an output index in 0..{n_out - 1}")
    sub = a if output is None else a[:, int(output) : int(output) + 1]
    dev, dt = a.device, a.dtype
    with torch.no_grad():
        p1 = _parts(mod, x1.to(dev, dt), sub, block_size)
        p2 = p1 if x2 is None else _parts(mod, x2.to(dev, dt), sub, block_size)
        gx = p1["xh"] @ p2["xh"].T
        gq = p1["q"] @ p2["q"].T
        gr = p1["r"] @ p2["r"].T
        kk = sub.shape[1]
        theta = torch.empty(x1.shape[0], p2["xh"].shape[0], kk, kk, dtype=dt, device=dev)
        for k in range(kk):
            for ll in range(kk):
                blk = gx * (p1["aq"][k] @ p2["aq"][ll].T)
                blk += (p1["ak"][k] @ p2["ak"][ll].T) * gq
                blk += gr * (p1["v"][k] @ p2["v"][ll].T)
                theta[:, :, k, ll] = blk
    return theta[:, :, 0, 0] if kk == 1 else theta


def qkv_ntk(
    model: nn.Module,
    x1: torch.Tensor,
    x2: torch.Tensor | None = None,
    *,
    block_size: int = 4096,
    output: int | None = None,
) -> torch.Tensor:
    """Θ over every trainable parameter of QKV-Attn (attention + head); shapes as in
    ``engine.ntk.empirical_ntk``."""
    from engine.ntk.structured import structured_ntk

    if not has_qkv_structure(model):
        raise ConfigError("method", "structured", "a QKV-Attn model (use jacobian)")
    head = structured_ntk(model, x1, x2, block_size=block_size, output=output)
    return head + qkv_attention_ntk(model, x1, x2, block_size=block_size, output=output)
