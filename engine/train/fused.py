"""The closed-form training step of a two-layer head on fixed features, B networks at once.

2L-ReLU (x̃ = x/‖x‖) and MLP-Attn (x̃ = Cx̂/‖Cx̂‖, C a buffer) are both
f(x̃) = m^{-1/2} ReLU(x̃Wᵀ) a on features that no trainable parameter touches, and their
linearized twins (``engine.ntk.Linearized``, structured) are
f_lin = m^{-1/2} [(D₀ ⊙ x̃Wᵀ) a₀ + ReLU(x̃W₀ᵀ)(a − a₀)] with the fixed pattern
D₀ = 1[x̃W₀ᵀ > 0]. So the gradient of a batch's loss has a closed form, written here with
batched matmuls over B stacked networks ([B, b, d] features, [B, m, d] weights):

    forward   z = x̃Wᵀ, h = ReLU(z) (twin: h = D₀ ⊙ z, r = ReLU(z₀)), out = h a / √m
    loss      MSE: (1/b) Σ w_i (out_i − y_i)²;  CE: (1/b) Σ w_i (logsumexp(out_i) − out_i,y_i)
    backward  g = ∂loss/∂out;  ∂a = hᵀ g / √m (twin: rᵀ g / √m);
              ∂W = ((g aᵀ / √m) ⊙ 1[z > 0])ᵀ x̃  (twin: the mask D₀, a₀ in place of a)

with w_i the point's weight (0 for an excluded point, the batch keeping its 1/b). No
autograd graph is built. ``engine.train.batched`` runs the rest (batch order, optimiser,
L2 as the optimiser's coupled weight decay, statistics, stops, divergence) exactly as for
its autograd step, so the fused path differs from the autograd one only by the rounding
of these matmuls: in float64 the weights agree to 1e-10 after 200 steps
(``tests/engine/train/test_fused.py``); speeds in docs/benchmarks-training.md.

``plan(model)`` says whether a model takes this path; QKV-Attn (its attention is trained)
and jvp twins do not, and train through autograd (``train.engine = "autograd"`` forces
that path for every model: the reference).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from engine.kinds import TRAIN_ENGINES
from engine.models.closed_form import example_loss_grad, mask

DEFAULT_ENGINE = TRAIN_ENGINES[0]
"""A configuration without ``engine`` (a test's ad-hoc one) gets the fused step."""

GradFn = Callable[..., tuple[dict[str, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]]


def engine_of(cfg: Any) -> str:
    """The training engine a configuration asks for (``train.engine``; a configuration
    without the field: ``DEFAULT_ENGINE``)."""
    return str(getattr(cfg, "engine", DEFAULT_ENGINE))


@dataclass(frozen=True)
class FusedPlan:
    """How the fused step reads one model class.

    ``roles``: the chunk's trainable parameter names (``_Chunk.names``) → "w" or "a";
    ``linear``: a linearized twin; ``width``: m; ``n_out``: K. ``features(model, x)`` [n, d] → x̃ [n, d'];
    ``frozen(model)``: the per-network tensors the step reads besides the trained ones
    (``a`` when the output layer is fixed; the twin's ``w0`` and ``a0``)."""

    roles: dict[str, str]
    linear: bool
    width: int
    n_out: int
    features: Callable[[nn.Module, torch.Tensor], torch.Tensor]
    frozen: Callable[[nn.Module], dict[str, torch.Tensor]]


def _is_head(head: Any) -> bool:
    from engine.models.two_layer import TwoLayerNet

    return isinstance(head, TwoLayerNet)


def plan(model: nn.Module) -> FusedPlan | None:
    """The fused plan of ``model`` (a 2L-ReLU or MLP-Attn network, or the structured
    linearized twin of one), or None: it trains through autograd."""
    from engine.ntk.linearized import Linearized

    if isinstance(model, Linearized):
        return _twin_plan(model)
    head = getattr(model, "head", None)
    if not (getattr(model, "fixed_features", False) and _is_head(head)):
        return None
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    own = {id(p): k for k, p in head.named_parameters() if p.requires_grad}  # type: ignore[union-attr]
    if set(own) != trainable or not set(own.values()) <= {"weight", "output"}:
        return None
    roles = {k: ("w" if k == "weight" else "a") for k in own.values()}
    if "w" not in roles.values():
        return None

    def frozen(m: nn.Module) -> dict[str, torch.Tensor]:
        h: Any = m.head  # type: ignore[union-attr]
        return {} if "output" in roles else {"a": h.output.detach()}

    def feats(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return m.features(x)  # type: ignore[operator,no-any-return]

    h: Any = head
    return FusedPlan(roles, False, int(h.width), int(h.n_out), feats, frozen)


def _twin_plan(twin: Any) -> FusedPlan | None:
    base = twin.base
    if twin.method != "structured" or not getattr(base, "fixed_features", False):
        return None
    if not _is_head(getattr(base, "head", None)):
        return None
    roles: dict[str, str] = {}
    for i, name in enumerate(twin.names):
        if name == twin._w_name:
            roles[f"theta.{i}"] = "w"
        elif name == twin._a_name:
            roles[f"theta.{i}"] = "a"
        else:
            return None
    if "w" not in roles.values():
        return None

    def frozen(m: nn.Module) -> dict[str, torch.Tensor]:
        h: Any = m.base.head  # type: ignore[union-attr]
        return {"w0": h.weight.detach(), "a0": h.output.detach()}

    def feats(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return m.base.features(x)  # type: ignore[union-attr,operator,no-any-return]

    return FusedPlan(roles, True, int(base.head.width), int(base.head.n_out), feats, frozen)


def grad_fn(p: FusedPlan) -> GradFn:
    """The step's gradient function, with ``engine.train.batched``'s signature:
    (params {name: [B, ...]}, frozen {key: [B, ...]}, x̃ [B, b, d], y [B, b] (±1 floats or
    labels), weights [B, b]) → (grads {name: [B, ...]}, (loss [B], out [B, b, K])). A
    twin's ``frozen`` may hold "z0" [B, b, m], x̃W₀ᵀ of these points (``chunk.Chunk``
    computes it once for every point); else the step computes it.

    ``weights`` None: every point weighs 1 (the chunk excludes none).

    The [B, b, m] activations and the [B, m, d] weight gradient are written into buffers
    the function keeps (``_Buffers``, one per shape), so the returned weight gradient is
    overwritten by the next call: the caller consumes it first (the chunk's optimiser
    step does). Fresh tensors of that size cost the CPU a page fault per 4 KiB each step
    (four [800, 4096] tensors a full-batch MNIST step: 12 000 faults, docs/benchmarks-training.md).
    The 1/√m scale is applied to the [B, b, K] output gradient, not to [B, b, m] products."""
    w_key = next(k for k, r in p.roles.items() if r == "w")
    a_key = next((k for k, r in p.roles.items() if r == "a"), None)
    scale = 1.0 / math.sqrt(p.width)
    buf = _Buffers()

    @torch.no_grad()
    def fn(
        params: dict[str, torch.Tensor],
        fixed: dict[str, torch.Tensor],
        xb: torch.Tensor,
        yb: torch.Tensor,
        wb: torch.Tensor | None,
    ) -> tuple[dict[str, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
        w = params[w_key]
        nb, b, m = w.shape[0], xb.shape[1], w.shape[1]
        z = torch.bmm(xb, w.transpose(1, 2), out=buf("z", (nb, b, m), w))  # [B, b, m]
        if p.linear:
            a0 = fixed["a0"]
            z0 = fixed.get("z0")  # x̃W₀ᵀ of these points, when the caller has it
            if z0 is None:
                z0 = torch.bmm(xb, fixed["w0"].transpose(1, 2), out=buf("z0", (nb, b, m), w))
            h = mask(z, z0, out=z)  # D₀ ⊙ z, in place
            out = torch.bmm(h, a0)
            if a_key is not None:
                r = torch.clamp_min(z0, 0, out=buf("r", (nb, b, m), w))  # ReLU(z₀)
                out = out + torch.bmm(r, params[a_key] - a0)
            gate, a_back = z0, a0  # D₀ = 1[z₀ > 0]; ∂out/∂h reads the fixed a₀
        else:
            h = z.clamp_min_(0)  # ReLU in place: z is not read again
            a = params[a_key] if a_key is not None else fixed["a"]
            out = torch.bmm(h, a)
            gate, a_back, r = h, a, h  # 1[z > 0] = 1[h > 0]
        out = out * scale
        g, loss = _loss_grad(out, yb, wb)  # [B, b, K], [B]
        g = g * scale  # ∂loss/∂(h a), the 1/√m folded in once
        gz = torch.bmm(g, a_back.transpose(1, 2), out=buf("gz", (nb, b, m), w))
        mask(gz, gate, out=gz)
        grads = {w_key: torch.bmm(gz.transpose(1, 2), xb, out=buf("gw", w.shape, w))}  # [B, m, d]
        if a_key is not None:
            grads[a_key] = torch.bmm(r.transpose(1, 2), g)  # [B, m, K]
        return grads, (loss, out)

    return fn


class _Buffers:
    """Output buffers of ``grad_fn`` by (name, shape, dtype, device): an epoch's shorter
    last mini-batch has its own; a chunk that dropped networks starts a new set (the
    old ones are let go once ``MAX_HELD`` are held)."""

    MAX_HELD = 16

    def __init__(self) -> None:
        self.held: dict[tuple[Any, ...], torch.Tensor] = {}

    def __call__(
        self, name: str, shape: tuple[int, ...] | torch.Size, like: torch.Tensor
    ) -> torch.Tensor:
        key = (name, tuple(shape), like.dtype, like.device)
        t = self.held.get(key)
        if t is None:
            if len(self.held) >= self.MAX_HELD:
                self.held.clear()
            t = self.held[key] = torch.empty(shape, dtype=like.dtype, device=like.device)
        return t


def _loss_grad(
    out: torch.Tensor, yb: torch.Tensor, wb: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(∂loss/∂out [B, b, K], loss [B]) of the weighted batch mean (``loop.data_loss``:
    MSE on ±1 targets with one output, cross-entropy on labels), 1/b whatever the weights;
    ``wb`` None: every weight 1 (no point excluded), the same numbers in two fewer
    operations (x · 1 is x, and 1/b the same float whether a tensor or a scalar divides)."""
    b = yb.shape[1]
    g, each = example_loss_grad(out, yb)  # [B, b, K], [B, b]
    if wb is None:
        return g * (1.0 / b), each.sum(1) / b
    return g * (wb / b).unsqueeze(-1), (each * wb).sum(1) / b


Step = Callable[[list[torch.Tensor]], None]
"""One optimiser update of the bound parameters with these gradients (``stepper``)."""


def stepper(opt: torch.optim.Optimizer, params: list[torch.Tensor]) -> Step:
    """The update of ``params`` by ``opt`` (``base.make_optimizer``'s Adam or SGD, one
    parameter group), resolved once: the returned function(grads) runs the kernel
    ``opt.step()`` runs, without its Python wrapper (a third of a small fused step) and
    without looking anything up a step. Fused Adam: ``torch._fused_adam_`` on the
    optimiser's own state (created now, as torch creates it, unless it is there: a chunk
    that dropped networks carries their moments over); SGD on a CPU: torch's single-tensor
    update (coupled weight decay, no momentum). Anything else: ``opt.step()`` with the
    gradients set. Element by element the same arithmetic, so bitwise the same. The
    group's hyper-parameters are read here: bind again after changing them."""
    group = opt.param_groups[0]
    cpu = params[0].device.type == "cpu"
    if isinstance(opt, torch.optim.Adam) and group.get("fused") and not group["amsgrad"]:
        return _adam(opt, group, params)
    if isinstance(opt, torch.optim.SGD) and cpu and not group["momentum"] and not group["maximize"]:
        lr, wd = float(group["lr"]), float(group["weight_decay"])

        def sgd(grads: list[torch.Tensor]) -> None:
            for p, g in zip(params, grads):
                p.add_(g.add(p, alpha=wd) if wd != 0 else g, alpha=-lr)

        return sgd

    def generic(grads: list[torch.Tensor]) -> None:
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()
        for p in params:
            p.grad = None

    return generic


def _adam(opt: torch.optim.Optimizer, group: dict[str, Any], params: list[torch.Tensor]) -> Step:
    """``torch.optim.Adam(fused=True).step()``'s work (``adam._fused_adam``) on its state."""
    from torch.optim.optimizer import _get_scalar_dtype

    states = []
    for p in params:
        st = opt.state[p]
        if not st:  # as ``Adam._init_group`` makes it for the fused kernel
            st["step"] = torch.tensor(0.0, dtype=_get_scalar_dtype(is_fused=True), device=p.device)
            st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        states.append(st)
    steps = [st["step"] for st in states]
    avgs = [st["exp_avg"] for st in states]
    sqs = [st["exp_avg_sq"] for st in states]
    beta1, beta2 = (float(b) for b in group["betas"])
    lr, wd, eps = float(group["lr"]), float(group["weight_decay"]), float(group["eps"])
    maximize = bool(group["maximize"])

    @torch.no_grad()
    def adam(grads: list[torch.Tensor]) -> None:
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(
            params,
            grads,
            avgs,
            sqs,
            [],
            steps,
            amsgrad=False,
            lr=lr,
            beta1=beta1,
            beta2=beta2,
            weight_decay=wd,
            eps=eps,
            maximize=maximize,
            grad_scale=None,
            found_inf=None,
        )

    return adam
