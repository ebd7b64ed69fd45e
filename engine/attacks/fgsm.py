"""Fast Gradient Sign Method (Goodfellow et al., 2015): one step of size ε."""

from __future__ import annotations

import torch
from torch import nn

from engine.attacks.base import (
    DEFAULT_ENGINE,
    AttackResult,
    Ball,
    LossFn,
    ascent_direction,
    check_norm,
    check_positive,
    eval_loss,
    gradient,
    per_example_loss,
    run_batched,
)


def fgsm(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    eps: float,
    norm: str = "linf",
    loss_fn: LossFn | None = None,
    batch_size: int = 1024,
    engine: str = DEFAULT_ENGINE,
) -> AttackResult:
    """x_adv = clamp(x + ε·sign(∇ₓL)) (ℓ∞) or clamp(x + ε·∇ₓL/‖∇ₓL‖₂) (ℓ2), into [0, 1].

    x [n, d] pixels in [0, 1], y [n] (±1 float targets or int labels). ``loss_fn``
    (model, x, y) → [n] replaces the training loss; ``engine``: the input gradient's path
    (``base.gradient``: fused or autograd). The clean forward pass that gives
    the gradient also gives ``loss_before``; one more forward gives ``loss_after``.
    """
    check_positive("eps", eps)
    check_norm(norm)
    loss = loss_fn or per_example_loss
    grad = gradient(model, loss_fn, engine)

    def one(xb: torch.Tensor, yb: torch.Tensor):
        ball = Ball(xb, eps, norm)
        g, l0 = grad(xb, yb)
        xa = ball.project(torch.add(xb, ascent_direction(g, norm), alpha=float(eps)))
        return xa, l0, eval_loss(model, xa, yb, loss)

    return run_batched(model, x, y, one, eps=eps, batch_size=batch_size)
