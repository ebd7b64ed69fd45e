"""Closed-form derivatives of the two-layer head on its parameter-free features.

2L-ReLU and MLP-Attn are f(x) = m^{-1/2} ReLU(x̃Wᵀ) a with features x̃ that no trainable
parameter touches (docs/protocol.md#models):

    2L-ReLU   x̃ = v/‖v‖,                       v = x − μ (data.center; else x)
    MLP-Attn  x̃ = t/‖t‖, t = x̂ C, x̂ = v/‖v‖   (C = X̂ᵀX̂ of the context: a buffer, fixed)

so the per-example loss (MSE (f − y)² on ±1 targets with one output, cross-entropy on
labels: ``engine.attacks.base.loss_from_output``) has an input gradient written with a
few batched matmuls over B stacked networks, no autograd graph:

    out = ReLU(x̃Wᵀ) a / √m;  g = ∂L/∂out;  ∂L/∂x̃ = ((g aᵀ / √m) ⊙ 1[x̃Wᵀ > 0]) W
    through u = v/‖v‖:  ∂L/∂v = (∂L/∂u − u (u · ∂L/∂u)) / ‖v‖;  through t = x̂C: ∂L/∂x̂ = ∂L/∂t Cᵀ

The pieces here are shared with the closed-form training step (``engine.train.fused``:
``example_loss_grad``, ``mask``) and feed the attacks' and adversarial training's input
gradient (``engine.attacks.base.gradient``). In float64 they equal torch.autograd's to
rounding (``tests/engine/models/test_closed_form.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from engine.models.attention import LinearizedAttention
from engine.models.mlp_attn import MLPAttn
from engine.models.two_layer import TwoLayerNet

NORM_EPS = 1e-12
"""``normalize_rows``' floor on a row's norm (its default ``eps``)."""


def mask(t: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """t where gate > 0, else 0: ReLU's backward kernel (the one autograd runs), several
    times faster here than ``torch.where`` on a comparison."""
    return torch.ops.aten.threshold_backward(t, gate, 0)


def example_loss_grad(out: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(∂Lᵢ/∂outᵢ [..., K], Lᵢ [...]) of the per-example loss at outputs ``out`` [..., K]:
    (out − y)² for float targets y [...] (K = 1), cross-entropy for labels y [...]."""
    if torch.is_floating_point(y):  # targets in the outputs' dtype, as autograd's loss
        err = out[..., 0] - y.to(out.dtype)  # casts its gradient back (float64 ±1 labels)
        return (2.0 * err).unsqueeze(-1), err * err
    logp = torch.log_softmax(out, dim=-1)
    nll = -logp.gather(-1, y.unsqueeze(-1)).squeeze(-1)
    g = logp.exp()
    g.scatter_add_(-1, y.unsqueeze(-1), -torch.ones_like(nll).unsqueeze(-1))
    return g, nll


def _normalize(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(u = v / max(‖v‖, ``NORM_EPS``), ‖v‖, its floored value) over the last dim: what
    ``normalize_rows`` computes, with what its backward reads."""
    n = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    nc = n.clamp_min(NORM_EPS)
    return v / nc, n, nc


def normalize_backward(
    u: torch.Tensor, n: torch.Tensor, nc: torch.Tensor, g: torch.Tensor
) -> torch.Tensor:
    """∂L/∂v [..., d] of u = v / max(‖v‖, ``NORM_EPS``) (``_normalize``'s three outputs)
    given g = ∂L/∂u [..., d]: (g − u (u·g)) / ‖v‖, or g / eps on a row at the floor."""
    radial = u * (u * g).sum(-1, keepdim=True)
    return (g - radial * (n > NORM_EPS)) / nc


@dataclass(frozen=True)
class StackedHead:
    """B same-shaped networks of one closed-form kind, stacked: ``w`` [B, m, d'],
    ``a`` [B, m, K], ``shift`` [B, 1, d] or None (data.center's μ), ``context`` C
    [B, d, d] (MLP-Attn) or None (2L-ReLU), ``normalize``: 2L-ReLU scales x to unit rows."""

    w: torch.Tensor
    a: torch.Tensor
    shift: torch.Tensor | None
    context: torch.Tensor | None
    normalize: bool


def _parts(model: nn.Module) -> tuple[TwoLayerNet, torch.Tensor | None, torch.Tensor | None] | None:
    """(head, shift [d] or None, C [d, d] or None) of a closed-form model, else None."""
    if type(model) is TwoLayerNet:  # its shift applies only with the unit-norm scaling
        return model, model.input_shift if model.normalize_input else None, None
    if type(model) is MLPAttn and type(model.attention) is LinearizedAttention:
        att = model.attention
        return model.mlp, att.input_shift, att.C
    return None


def has_closed_form(model: nn.Module) -> bool:
    """Whether ``model``'s input gradient has the closed form here: a 2L-ReLU or MLP-Attn
    network (QKV-Attn trains its attention and a linearized twin is another module)."""
    return _parts(model) is not None


def stack(models: Sequence[nn.Module]) -> StackedHead | None:
    """The current weights of ``models`` (one closed-form kind and shape) stacked, or None
    when one of them has no closed form. B = 1 stacks by views, without a copy."""
    parts = [_parts(m) for m in models]
    if not parts or any(p is None for p in parts):
        return None
    heads = [p[0] for p in parts if p is not None]
    shifts = [p[1] for p in parts if p is not None]
    ctxs = [p[2] for p in parts if p is not None]

    def st(ts: list[torch.Tensor]) -> torch.Tensor:
        return ts[0].detach().unsqueeze(0) if len(ts) == 1 else torch.stack(ts).detach()

    shift = None
    if shifts[0] is not None:
        shift = st([s for s in shifts if s is not None]).unsqueeze(1)  # [B, 1, d]
    ctx = None if ctxs[0] is None else st([c for c in ctxs if c is not None])
    return StackedHead(
        st([h.weight for h in heads]),
        st([h.output for h in heads]),
        shift,
        ctx,
        bool(heads[0].normalize_input),
    )


def input_grad(
    net: StackedHead, x: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(∇ₓ Σᵢ Lᵢ [B, n, d], per-example loss L [B, n]) of the stacked networks at inputs
    x [B, n, d] (network b at x[b]) against y [B, n] (module docstring)."""
    return InputGrad(net)(x, y)


class InputGrad:
    """``input_grad`` of fixed stacked networks, its transposes and scale taken once:
    called with x [B, n, d], y [B, n] → (∇ₓ Σᵢ Lᵢ [B, n, d], L [B, n]). An attack's steps
    call it at the same weights (the tensors are the model's, so in-place updates show)."""

    def __init__(self, net: StackedHead) -> None:
        self.net = net
        scale = 1.0 / math.sqrt(net.w.shape[1])
        self.wt = net.w.transpose(1, 2)  # [B, d', m]
        self.a = net.a * scale  # out = ReLU(z) a / √m
        self.at = self.a.transpose(1, 2)  # [B, K, m]
        self.ct = None if net.context is None else net.context.transpose(1, 2)

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        net = self.net
        v = x if net.shift is None else x - net.shift
        if net.context is not None:  # MLP-Attn: x̂ = v/‖v‖, t = x̂C, x̃ = t/‖t‖
            xh, n1, nc1 = _normalize(v)
            t = torch.bmm(xh, net.context)
        else:
            t = v
        norm_last = net.context is not None or net.normalize
        xt, n2, nc2 = _normalize(t) if norm_last else (t, t, t)
        h = torch.relu(torch.bmm(xt, self.wt))  # [B, n, m]
        g, loss = example_loss_grad(torch.bmm(h, self.a), y)  # ∂L/∂out [B, n, K], L [B, n]
        gx = torch.bmm(mask(torch.bmm(g, self.at), h), net.w)  # ∂L/∂x̃
        if norm_last:
            gx = normalize_backward(xt, n2, nc2, gx)
        if self.ct is not None:
            gx = normalize_backward(xh, n1, nc1, torch.bmm(gx, self.ct))
        return gx, loss


def model_input_grad(
    model: nn.Module,
) -> Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]] | None:
    """``(x [n, d], y [n]) → (∇ₓ Σᵢ Lᵢ [n, d], L [n])`` of ``model`` as it is at each call
    (views of its tensors: an in-place update shows), or None when it has no closed form
    (``has_closed_form``)."""
    net = stack([model])
    if net is None:
        return None
    fn = InputGrad(net)

    def grad(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        g, loss = fn(x.unsqueeze(0), y.unsqueeze(0))
        return g[0], loss[0]

    return grad
