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
from typing import Any

import torch
from torch import nn

from engine.models.attention import LinearizedAttention
from engine.models.mlp_attn import MLPAttn
from engine.models.two_layer import TwoLayerNet

NORM_EPS = 1e-12
"""``normalize_rows``' floor on a row's norm (its default ``eps``)."""


def mask(t: torch.Tensor, gate: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """t where gate > 0, else 0: ReLU's backward kernel (the one autograd runs), several
    times faster here than ``torch.where`` on a comparison. ``out``: written there (may
    be ``t`` itself: masked in place) and returned."""
    if out is None:
        return torch.ops.aten.threshold_backward(t, gate, 0)
    return torch.ops.aten.threshold_backward.grad_input(t, gate, 0, grad_input=out)


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


def minus_onehot(y: torch.Tensor, k: int, dtype: torch.dtype) -> torch.Tensor:
    """−onehot(y) [..., k] of labels y [...] in ``dtype``: what ``example_loss_grad``'s
    cross-entropy adds to the softmax, made once for targets that stay (an attack's)."""
    return -torch.nn.functional.one_hot(y, k).to(dtype)


def example_grad(out: torch.Tensor, y: torch.Tensor, onehot: torch.Tensor | None) -> torch.Tensor:
    """``example_loss_grad(out, y)[0]`` without the loss, bitwise: for labels, with
    ``onehot`` = ``minus_onehot(y, K, out.dtype)`` (adding −0.0 off the label leaves the
    softmax unchanged, −1 at it is the scatter's add)."""
    if onehot is None:
        return example_loss_grad(out, y)[0]
    return torch.log_softmax(out, dim=-1).exp_().add_(onehot)


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
class FeatureMap:
    """The feature map of networks ``lo``..``hi`` - 1 of a ``StackedHead``: ``shift``
    [k, 1, d] or None (data.center's μ), ``context`` C [k, d, d] (MLP-Attn) or None
    (2L-ReLU), ``normalize``: 2L-ReLU scales x to unit rows."""

    lo: int
    hi: int
    shift: torch.Tensor | None
    context: torch.Tensor | None
    normalize: bool

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """x [k, n, d] → (x̃ [k, n, d'], what ``backward`` reads)."""
        v = x if self.shift is None else x - self.shift
        if self.context is not None:  # MLP-Attn: x̂ = v/‖v‖, t = x̂C, x̃ = t/‖t‖
            xh, n1, nc1 = _normalize(v)
            xt, n2, nc2 = _normalize(torch.bmm(xh, self.context))
            return xt, (xt, n2, nc2, xh, n1, nc1)
        if self.normalize:
            xt, n2, nc2 = _normalize(v)
            return xt, (xt, n2, nc2)
        return v, ()

    def backward(self, gx: torch.Tensor, saved: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """∂L/∂x [k, n, d] from ∂L/∂x̃ [k, n, d'] (``forward``'s ``saved``)."""
        if not saved:
            return gx
        gx = normalize_backward(saved[0], saved[1], saved[2], gx)
        if self.context is not None:
            ct = self.context.transpose(1, 2)
            gx = normalize_backward(saved[3], saved[4], saved[5], torch.bmm(gx, ct))
        return gx


@dataclass(frozen=True)
class StackedHead:
    """B same-shaped networks of the closed-form kinds, stacked: ``w`` [B, m, d'],
    ``a`` [B, m, K], and ``maps``: the feature maps of consecutive runs of networks
    (``FeatureMap``; one run when all are of one kind, 2L-ReLU and MLP-Attn of one
    width stacked together have one each), so each network's input gradient goes
    through its own feature map while the head's products run over all B."""

    w: torch.Tensor
    a: torch.Tensor
    maps: tuple[FeatureMap, ...]


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


def _st(ts: list[torch.Tensor]) -> torch.Tensor:
    """``ts`` stacked (one: a view, without a copy)."""
    return ts[0].detach().unsqueeze(0) if len(ts) == 1 else torch.stack(ts).detach()


def stack(models: Sequence[nn.Module]) -> StackedHead | None:
    """The current weights of ``models`` (closed-form networks of one head shape: 2L-ReLU,
    MLP-Attn or both) stacked, or None when one of them has no closed form. Consecutive
    networks with the same kind of feature map share a ``FeatureMap``. B = 1 stacks by
    views, without a copy."""
    parts = [_parts(m) for m in models]
    if not parts or any(p is None for p in parts):
        return None
    full = [p for p in parts if p is not None]

    def sig(p: tuple[TwoLayerNet, torch.Tensor | None, torch.Tensor | None]) -> tuple[bool, ...]:
        return (p[1] is None, p[2] is None, bool(p[0].normalize_input))

    maps: list[FeatureMap] = []
    lo = 0
    for hi in range(1, len(full) + 1):
        if hi < len(full) and sig(full[hi]) == sig(full[lo]):
            continue
        run = full[lo:hi]
        shift = None if run[0][1] is None else _st([p[1] for p in run if p[1] is not None])
        ctx = None if run[0][2] is None else _st([p[2] for p in run if p[2] is not None])
        norm = bool(run[0][0].normalize_input)
        maps.append(FeatureMap(lo, hi, None if shift is None else shift.unsqueeze(1), ctx, norm))
        lo = hi
    return StackedHead(
        _st([p[0].weight for p in full]), _st([p[0].output for p in full]), tuple(maps)
    )


def input_grad(
    net: StackedHead, x: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(∇ₓ Σᵢ Lᵢ [B, n, d], per-example loss L [B, n]) of the stacked networks at inputs
    x [B, n, d] (network b at x[b]) against y [B, n] (module docstring)."""
    g, loss = InputGrad(net)(x, y)
    assert loss is not None
    return g, loss


class InputGrad:
    """``input_grad`` of fixed stacked networks, its transposes and scale taken once:
    called with x [B, n, d], y [B, n] → (∇ₓ Σᵢ Lᵢ [B, n, d], L [B, n]). An attack's steps
    call it at the same weights (the tensors are the model's, so in-place updates show).
    Each run of networks (``StackedHead.maps``) goes through its own feature map; the
    head's four products run once over all B.

    When every network's map starts with the same unit-norm scaling of x − μ (2L-ReLU
    and MLP-Attn, both centred or neither), that first stage and its backward run once
    over all B, and only MLP-Attn's second stage (x̂C, scaled) runs on its slice: the
    same element-wise arithmetic and row reductions as one map at a time (bitwise,
    ``tests/engine/models/test_closed_form.py``), in fewer, larger operations (a PGD
    step of small networks is bound by their count, docs/benchmarks-training.md)."""

    def __init__(self, net: StackedHead) -> None:
        self.net = net
        scale = 1.0 / math.sqrt(net.w.shape[1])
        self.wt = net.w.transpose(1, 2)  # [B, d', m]
        self.a = net.a * scale  # out = ReLU(z) a / √m
        self.at = self.a.transpose(1, 2)  # [B, K, m]
        maps = net.maps
        shifted = {fm.shift is not None for fm in maps}
        self.joint = (
            len(maps) > 1
            and len(shifted) == 1
            and all(fm.normalize or fm.context is not None for fm in maps)
        )
        self.shift = None
        if self.joint and maps[0].shift is not None:
            self.shift = torch.cat([fm.shift for fm in maps if fm.shift is not None])
        self.contexts = [(fm.lo, fm.hi, fm.context) for fm in maps if fm.context is not None]

    def features(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[Any, ...]]:
        """x [B, n, d] → (x̃ [B, n, d'], what ``backward`` reads): each network's features."""
        net = self.net
        if len(net.maps) == 1:
            xt, saved = net.maps[0].forward(x)
            return xt, (saved,)
        if not self.joint:
            outs = [fm.forward(x[fm.lo : fm.hi]) for fm in net.maps]
            return torch.cat([f[0] for f in outs]), tuple(f[1] for f in outs)
        first = _normalize(x if self.shift is None else x - self.shift)
        xh, second, parts = first[0], [], []
        for fm in net.maps:
            if fm.context is None:
                parts.append(xh[fm.lo : fm.hi])
                continue
            stage = _normalize(torch.bmm(xh[fm.lo : fm.hi], fm.context))
            second.append(stage)
            parts.append(stage[0])
        return torch.cat(parts), (first, tuple(second))

    def backward(self, gx: torch.Tensor, saved: tuple[Any, ...]) -> torch.Tensor:
        """∂L/∂x [B, n, d] from ∂L/∂x̃ [B, n, d'] (``features``' saved; ``gx`` is
        overwritten)."""
        net = self.net
        if len(net.maps) == 1:
            return net.maps[0].backward(gx, saved[0])
        if not self.joint:
            return torch.cat(
                [fm.backward(gx[fm.lo : fm.hi], sv) for fm, sv in zip(net.maps, saved)]
            )
        first, second = saved
        for (lo, hi, ctx), stage in zip(self.contexts, second):
            g2 = normalize_backward(stage[0], stage[1], stage[2], gx[lo:hi])
            torch.bmm(g2, ctx.transpose(1, 2), out=gx[lo:hi])
        return normalize_backward(first[0], first[1], first[2], gx)

    @torch.no_grad()
    def __call__(
        self, x: torch.Tensor, y: torch.Tensor, onehot: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(∇ₓ Σᵢ Lᵢ, L) at x; with ``onehot`` (labels y: ``minus_onehot(y, K, dtype)``)
        the loss is not computed (None): a training PGD's steps do not read it."""
        xt, saved = self.features(x)
        h = torch.relu(torch.bmm(xt, self.wt))  # [B, n, m]
        out = torch.bmm(h, self.a)
        if onehot is None:
            g, loss = example_loss_grad(out, y)  # ∂L/∂out [B, n, K], L [B, n]
        else:
            g, loss = example_grad(out, y, onehot), None
        gx = torch.bmm(mask(torch.bmm(g, self.at), h), self.net.w)  # ∂L/∂x̃
        return self.backward(gx, saved), loss


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
        assert loss is not None
        return g[0], loss[0]

    return grad
