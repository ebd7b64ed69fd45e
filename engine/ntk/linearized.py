"""The linearized twin of a network: its first-order Taylor model around θ₀ (docs/protocol.md#ntk).

    f_lin(x; θ) = f(x; θ₀) + J(x; θ₀)(θ − θ₀),    J = ∂f/∂θ at the initial weights.

Trained with the same loss, optimiser, L2, batch order and epochs as the network, it is
the reference of the kernel regime for any loss and optimiser (Lee et al. 2019): the
network is lazy when ‖f_m − f_lin‖ → 0. ``Linearized(model)`` is an ``nn.Module`` whose
trainable parameters θ have the network's shapes, start at θ₀ and are the only ones that
``requires_grad`` (so ``engine.train.train`` and its L2 penalty (λ/2)‖θ‖² treat the twin
exactly like the network: the penalty is on θ, not on θ − θ₀, as for the network).

Two ways to evaluate J(x; θ₀)(θ − θ₀), neither materialising a Jacobian:

* ``structured`` (TwoLayerNet / MLPAttn: a fixed feature map x ↦ x̃ and the head
  f = m^{-1/2} ReLU(x̃Wᵀ) a): with D₀ = 1[x̃W₀ᵀ > 0] the fixed activation pattern,
  f_lin = m^{-1/2} [(D₀ ⊙ x̃Wᵀ) a₀ + ReLU(x̃W₀ᵀ)(a − a₀)] (the second term only when the
  output layer is trained) — a linear model on fixed patterns, two matmuls a forward.
* ``jvp`` (any ``nn.Module``): ``torch.func.jvp`` of ``functional_call(model, θ₀, x)`` with
  tangent θ − θ₀; reverse mode differentiates the tangent with respect to θ.

``method="auto"`` picks ``structured`` when ``engine.ntk.has_structure(model)``.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Literal

import torch
from torch import nn
from torch.func import functional_call, jvp

from engine.errors import ConfigError
from engine.ntk.structured import has_structure

LinMethod = Literal["auto", "structured", "jvp"]
LIN_METHODS = ("auto", "structured", "jvp")


class Linearized(nn.Module):
    """The first-order Taylor model of ``model`` around its current weights θ₀.

    ``model`` is copied (its parameters frozen in the copy), so training the twin never
    touches the network. Only the parameters of ``model`` that ``requires_grad`` are
    linearised and trained; frozen ones (e.g. the paper's fixed ±1 output layer) and
    buffers stay at their θ₀ values. ``forward(x)`` maps x [n, ...] to the model's output
    shape, e.g. [n, n_out]; at θ = θ₀ it equals ``model(x)``.

    Attributes: ``method`` ("structured" or "jvp"), ``names`` (the linearised
    parameters' names in ``model``), ``theta`` (their current values, a ParameterList).
    """

    def __init__(self, model: nn.Module, *, method: LinMethod = "auto") -> None:
        super().__init__()
        if method not in LIN_METHODS:
            raise ConfigError("method", method, ", ".join(LIN_METHODS))
        if method == "auto":
            method = "structured" if has_structure(model) else "jvp"
        if method == "structured" and not has_structure(model):
            raise ConfigError("method", method, "jvp for a model without the two-layer structure")
        self.method: str = method
        base = copy.deepcopy(model).eval()
        trained = {n for n, p in model.named_parameters() if p.requires_grad}
        self.names: list[str] = [n for n, _ in base.named_parameters() if n in trained]
        for p in base.parameters():
            p.requires_grad_(False)
        self.base = base
        params = dict(base.named_parameters())
        self.theta = nn.ParameterList(
            [nn.Parameter(params[n].detach().clone()) for n in self.names]
        )
        if method == "structured":
            head = base.head  # type: ignore[attr-defined]
            self._head_prefix = next(n for n, m in base.named_modules() if m is head)
            self._w_name = _join(self._head_prefix, "weight")
            self._a_name = _join(self._head_prefix, "output")

    def _current(self) -> dict[str, torch.Tensor]:
        return dict(zip(self.names, self.theta))

    def delta(self) -> dict[str, torch.Tensor]:
        """θ − θ₀ per linearised parameter name (differentiable in θ)."""
        p0 = dict(self.base.named_parameters())
        return {n: t - p0[n] for n, t in self._current().items()}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, ...] → f_lin(x; θ), the model's output shape."""
        if self.method == "structured":
            return self._forward_structured(x)
        return self._forward_jvp(x)

    def _forward_structured(self, x: torch.Tensor) -> torch.Tensor:
        base: Any = self.base
        cur = self._current()
        head: Any = base.head
        xt = base.features(x)
        w0, a0 = head.weight, head.output
        z0 = xt @ w0.T  # [n, m]; its sign is the fixed activation pattern D₀
        w = cur.get(self._w_name, w0)
        lin = torch.where(z0 > 0, xt @ w.T, torch.zeros((), dtype=z0.dtype, device=z0.device))
        out = lin @ a0
        if self._a_name in cur:  # a trained output layer: J_a (a − a₀) = ReLU(z₀)(a − a₀)
            out = out + torch.relu(z0) @ (cur[self._a_name] - a0)
        return out / math.sqrt(head.width)

    def _forward_jvp(self, x: torch.Tensor) -> torch.Tensor:
        base = self.base
        p0: dict[str, torch.Tensor] = {
            n: p for n, p in base.named_parameters() if n in set(self.names)
        }
        fixed: dict[str, torch.Tensor] = {n: p for n, p in base.named_parameters() if n not in p0}
        fixed.update(dict(base.named_buffers()))

        def f(params: dict[str, torch.Tensor]) -> torch.Tensor:
            return functional_call(base, {**fixed, **params}, (x,))

        res = jvp(f, (p0,), (self.delta(),))
        return res[0] + res[1]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name
