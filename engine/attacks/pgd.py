"""Projected Gradient Descent (Madry et al., 2018), with random start and restarts."""

from __future__ import annotations

import torch
from torch import nn

from engine.attacks.base import (
    AttackResult,
    Ball,
    LossFn,
    ascent_direction,
    check_count,
    check_norm,
    check_positive,
    eval_loss,
    input_grad,
    per_example_loss,
    run_batched,
)


def pgd_steps(
    model: nn.Module,
    yb: torch.Tensor,
    ball: Ball,
    z: torch.Tensor,
    *,
    steps: int,
    alpha: float,
    loss_fn: LossFn,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``steps`` projected ascent steps from z [n, d] in ``ball``; returns (z_final, loss [n] at z)."""
    l_start = None
    for _ in range(steps):
        g, lz = input_grad(model, z, yb, loss_fn)
        if l_start is None:
            l_start = lz
        z = ball.project(torch.add(z, ascent_direction(g, ball.norm), alpha=alpha))
    assert l_start is not None
    return z, l_start


def pgd(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    eps: float,
    steps: int = 40,
    alpha: float = 0.01,
    random_start: bool = True,
    restarts: int = 1,
    norm: str = "linf",
    loss_fn: LossFn | None = None,
    generator: torch.Generator | None = None,
    batch_size: int = 1024,
) -> AttackResult:
    """``steps`` steps x ← Π(x + α·sign(∇ₓL)) (ℓ∞) or Π(x + α·∇ₓL/‖∇ₓL‖₂) (ℓ2).

    Π projects onto the ε-ball around x and [0, 1]. ``random_start``: each restart
    begins at a uniform point of the ε-ball (ℓ2: uniform in its volume), drawn from
    ``generator`` (None: torch's default generator); of ``restarts`` runs each example
    keeps its final iterate with the highest loss. Without a random start all restarts
    would coincide, so one run is made. x [n, d] in [0, 1], y [n]; ``loss_fn``
    (model, x, y) → [n] overrides the training loss. The random draws are made batch
    by batch, so a seeded generator reproduces the result for the same batch_size.
    """
    check_positive("eps", eps)
    check_norm(norm)
    n_steps = check_count("steps", steps)
    step = check_positive("alpha", alpha)
    n_restarts = check_count("restarts", restarts)
    runs = n_restarts if random_start else 1
    loss = loss_fn or per_example_loss

    def one(xb: torch.Tensor, yb: torch.Tensor):
        ball = Ball(xb, eps, norm)
        l0 = None
        best_x = best_l = None
        for _ in range(runs):
            z0 = ball.random_point(generator) if random_start else xb
            z, l_start = pgd_steps(model, yb, ball, z0, steps=n_steps, alpha=step, loss_fn=loss)
            if not random_start:
                l0 = l_start  # the first forward pass was at x itself
            lz = eval_loss(model, z, yb, loss)
            if best_x is None or best_l is None:
                best_x, best_l = z, lz
            else:
                better = lz > best_l
                best_x = torch.where(better.view(-1, *([1] * (z.ndim - 1))), z, best_x)
                best_l = torch.where(better, lz, best_l)
        if l0 is None:
            l0 = eval_loss(model, xb, yb, loss)
        return best_x, l0, best_l

    return run_batched(model, x, y, one, eps=eps, batch_size=batch_size)
