"""The loss as a pure function of a model's trainable parameters.

Everything in ``engine.landscape`` evaluates one ``Objective``: the training loss
of ``model`` on fixed data ``(x, y)`` seen as a function of the *trainable*
parameters only (``requires_grad``); buffers (the attention's C, a fixed ±1 output
layer) and frozen parameters are held constant. Evaluation goes through
``torch.func.functional_call``, so stacked parameter sets can be ``vmap``-ed and
Hessian-vector products taken with ``jvp`` over ``grad``.

Loss default: ``engine.train.data_loss``, the exact training loss (MSE on ±1
targets for a binary one-output model, cross-entropy on integer labels). The L2
term (λ/2)‖θ‖² of training is *not* included unless ``l2 > 0`` is passed; it would
add λ to every Hessian eigenvalue and λ·P to the trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call, vmap

from engine.errors import ConfigError
from engine.train.loop import data_loss

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""(outputs [n, K], targets [n]) → scalar loss."""

Params = dict[str, torch.Tensor]

# Memory budget of one vmap chunk when ``chunk`` is left to us (see ``auto_chunk``).
_CHUNK_BUDGET_BYTES = 512 * 2**20


def trainable_parameters(model: nn.Module) -> Params:
    """Detached copies (sharing storage) of the parameters with ``requires_grad``, by name."""
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    if not params:
        raise ConfigError("model", type(model).__name__, "a module with trainable parameters")
    return params


@dataclass(frozen=True)
class Objective:
    """L(θ) = loss(model_θ(x), y) [+ (l2/2)‖θ‖²] over the trainable parameters θ.

    ``x`` [n, d] and ``y`` [n] are used whole (full-batch loss). ``consts`` holds the
    buffers and frozen parameters passed unchanged to ``functional_call``.
    """

    model: nn.Module
    x: torch.Tensor
    y: torch.Tensor
    params: Params
    consts: Params
    loss: LossFn
    l2: float = 0.0

    def __call__(self, params: Params) -> torch.Tensor:
        """Scalar loss at ``params`` (same names/shapes as ``self.params``)."""
        out = functional_call(self.model, {**self.consts, **params}, (self.x,))
        val = self.loss(out, self.y)
        if self.l2 > 0:
            val = val + 0.5 * self.l2 * sum((p * p).sum() for p in params.values())
        return val

    @property
    def numel(self) -> int:
        """P, the number of trainable scalars."""
        return sum(p.numel() for p in self.params.values())

    def flatten(self, params: Params) -> torch.Tensor:
        """Parameter dict → flat vector [P] (order of ``self.params``)."""
        return torch.cat([params[n].reshape(-1) for n in self.params])

    def unflatten(self, flat: torch.Tensor) -> Params:
        """Flat vector [P] → parameter dict (views into ``flat``)."""
        out, i = {}, 0
        for n, p in self.params.items():
            out[n] = flat[i : i + p.numel()].view_as(p)
            i += p.numel()
        return out

    def flat_fn(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """θ [P] → scalar loss, for ``torch.func.grad`` / ``jvp``."""
        return lambda flat: self(self.unflatten(flat))


def make_objective(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    loss: LossFn | None = None,
    l2: float = 0.0,
) -> Objective:
    """Bind ``model`` (used in eval mode, weights read now) and data x [n, d], y [n].

    ``x``/``y`` are moved to the device of the model's parameters; ``x`` also to its
    dtype, and float ``y`` too (integer labels stay integer).
    """
    if l2 < 0:
        raise ConfigError("l2", l2, "a number ≥ 0")
    model.eval()  # no dropout/batch-norm updates inside functional_call
    params = trainable_parameters(model)
    ref = next(iter(params.values()))
    consts = {n: p.detach() for n, p in model.named_parameters() if not p.requires_grad}
    consts.update({n: b for n, b in model.named_buffers()})
    x = x.to(ref.device, ref.dtype)
    y = y.to(ref.device, ref.dtype) if torch.is_floating_point(y) else y.to(ref.device)
    return Objective(model, x, y, params, consts, loss or data_loss, float(l2))


def auto_chunk(obj: Objective, total: int) -> int:
    """Points per vmap call so one chunk stays near 512 MiB.

    Per point we count a parameter copy (P) plus ~4 activation tensors of n × h,
    where h is the largest leading dimension of a trainable tensor (the hidden width
    of a TwoLayerNet): a heuristic, pass ``chunk`` explicitly to override.
    """
    elem = obj.x.element_size()
    h = max(p.shape[0] if p.ndim else 1 for p in obj.params.values())
    per_point = elem * (obj.numel + 4 * obj.x.shape[0] * h)
    return int(max(1, min(total, _CHUNK_BUDGET_BYTES // max(per_point, 1))))


@torch.no_grad()
def losses_along(
    obj: Objective,
    base: Params,
    directions: list[Params],
    coeffs: torch.Tensor,
    *,
    chunk: int | None = None,
) -> torch.Tensor:
    """L(base + Σ_j coeffs[k, j] · directions[j]) for every row k of coeffs [K, J] → [K].

    Rows are evaluated ``chunk`` at a time with ``vmap`` over stacked parameter sets,
    so a 21×21 surface is ⌈441/chunk⌉ batched passes, not 441 Python-level ones.
    """
    k_total, n_dirs = coeffs.shape
    if n_dirs != len(directions):
        raise ConfigError("coeffs", tuple(coeffs.shape), f"[K, {len(directions)}]")
    if chunk is not None and (not isinstance(chunk, int) or chunk < 1):
        raise ConfigError("chunk", chunk, "a positive integer or None (automatic)")
    step = chunk or auto_chunk(obj, k_total)
    ref = next(iter(base.values()))
    coeffs = coeffs.to(ref.device, ref.dtype)
    batched = vmap(obj)
    out = []
    for s in range(0, k_total, step):
        c = coeffs[s : s + step]
        stacked = {}
        for name, p in base.items():
            shape = (c.shape[0],) + (1,) * p.ndim
            val = p.unsqueeze(0).expand(c.shape[0], *p.shape)
            for j, d in enumerate(directions):
                val = val + c[:, j].view(shape) * d[name]
            stacked[name] = val
        out.append(batched(stacked).reshape(-1))
    return torch.cat(out)
