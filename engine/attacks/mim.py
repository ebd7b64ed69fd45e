"""Momentum Iterative Method (MI-FGSM, Dong et al., 2018)."""

from __future__ import annotations

import torch
from torch import nn

from engine.attacks.base import (
    DEFAULT_ENGINE,
    AttackResult,
    Ball,
    LossFn,
    _rownorm,
    ascent_direction,
    check_count,
    check_norm,
    check_positive,
    eval_loss,
    gradient,
    per_example_loss,
    run_batched,
)
from engine.errors import ConfigError


def mim(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    eps: float,
    steps: int = 10,
    decay: float = 1.0,
    alpha: float | None = None,
    norm: str = "linf",
    loss_fn: LossFn | None = None,
    batch_size: int = 1024,
    engine: str = DEFAULT_ENGINE,
) -> AttackResult:
    """``steps`` momentum steps from x: g ← μ·g + ∇ₓL/‖∇ₓL‖₁ (per example), x ← Π(x + α·sign(g)).

    μ = ``decay``; α defaults to ε/steps; Π projects onto the ε-ball (ℓ∞ clamp or ℓ2
    rescale) and [0, 1]. Under ℓ2 the step is α·g/‖g‖₂. No random start. With μ = 0
    this is iterative FGSM (PGD without random start); with steps = 1 and α = ε it is
    FGSM. x [n, d] in [0, 1], y [n]; ``loss_fn`` (model, x, y) → [n] overrides the loss;
    ``engine``: the input gradient's path (``base.gradient``: fused or autograd).
    """
    check_positive("eps", eps)
    check_norm(norm)
    n_steps = check_count("steps", steps)
    if not (isinstance(decay, (int, float)) and not isinstance(decay, bool) and decay >= 0):
        raise ConfigError("decay", decay, "a number ≥ 0 (1.0 in Dong et al.)")
    mu = float(decay)
    step = float(eps) / n_steps if alpha is None else check_positive("alpha", alpha)
    loss = loss_fn or per_example_loss
    grad = gradient(model, loss_fn, engine)

    def one(xb: torch.Tensor, yb: torch.Tensor):
        ball = Ball(xb, eps, norm)
        z = xb
        mom = torch.zeros_like(xb)
        l0 = None
        for _ in range(n_steps):
            g, lz = grad(z, yb)
            if l0 is None:
                l0 = lz  # the first step's forward pass is the clean loss
            g = g / _rownorm(g, 1.0).clamp_min(torch.finfo(g.dtype).tiny)
            mom = mom.mul_(mu).add_(g)
            z = ball.project(torch.add(z, ascent_direction(mom, norm), alpha=step))
        return z, l0, eval_loss(model, z, yb, loss)

    return run_batched(model, x, y, one, eps=eps, batch_size=batch_size)
