"""Projected Gradient Descent (Madry et al., 2018), with random start and restarts."""

from __future__ import annotations

import torch
from torch import nn

from engine.attacks.base import (
    DEFAULT_ENGINE,
    AttackResult,
    Ball,
    Gradient,
    LossFn,
    ascent_direction,
    check_count,
    check_norm,
    check_positive,
    eval_loss,
    gradient,
    per_example_loss,
    run_batched,
)

STEP_RATIO = 2.5
"""Madry et al. (2018): step α = 2.5·ε / steps, so the iterate can cross the ball (and back)."""


def madry_step(eps: float, steps: int) -> float:
    """PGD's default step size 2.5·ε / steps (``STEP_RATIO``): with a random start the
    iterate can travel from any point of the ε-ball to any other."""
    return STEP_RATIO * float(eps) / max(int(steps), 1)


def resolve_alpha(alpha: float | None, eps: float, steps: int) -> float:
    """``alpha``, or ``madry_step(eps, steps)`` when it is None: the one place the default
    step of every PGD (attacks, adversarial training, the flip protocol) is set."""
    return madry_step(eps, steps) if alpha is None else float(alpha)


def pgd_steps(
    grad: Gradient,
    yb: torch.Tensor,
    ball: Ball,
    z: torch.Tensor,
    *,
    steps: int,
    alpha: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``steps`` projected ascent steps from z [n, d] in ``ball`` along ``grad``
    (``base.gradient``); returns (z_final, loss [n] at z)."""
    l_start = None
    for _ in range(steps):
        g, lz = grad(z, yb)
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
    alpha: float | None = None,
    random_start: bool = True,
    restarts: int = 1,
    norm: str = "linf",
    loss_fn: LossFn | None = None,
    generator: torch.Generator | None = None,
    batch_size: int = 1024,
    engine: str = DEFAULT_ENGINE,
) -> AttackResult:
    """``steps`` steps x ← Π(x + α·sign(∇ₓL)) (ℓ∞) or Π(x + α·∇ₓL/‖∇ₓL‖₂) (ℓ2);
    ``alpha`` None: 2.5·ε / steps (``madry_step``).

    Π projects onto the ε-ball around x and [0, 1]. ``random_start``: each restart
    begins at a uniform point of the ε-ball (ℓ2: uniform in its volume), drawn from
    ``generator`` (None: torch's default generator); of ``restarts`` runs each example
    keeps its final iterate with the highest loss. Without a random start all restarts
    would coincide, so one run is made. x [n, d] in [0, 1], y [n]; ``loss_fn``
    (model, x, y) → [n] overrides the training loss. The random draws are made batch
    by batch, so a seeded generator reproduces the result for the same batch_size.
    ``engine``: the input gradient's path (``base.gradient``: fused or autograd).
    """
    check_positive("eps", eps)
    check_norm(norm)
    n_steps = check_count("steps", steps)
    step = check_positive("alpha", resolve_alpha(alpha, eps, n_steps))
    n_restarts = check_count("restarts", restarts)
    runs = n_restarts if random_start else 1
    loss = loss_fn or per_example_loss
    grad = gradient(model, loss_fn, engine)

    def one(xb: torch.Tensor, yb: torch.Tensor):
        ball = Ball(xb, eps, norm)
        l0 = None
        best_x = best_l = None
        for _ in range(runs):
            z0 = ball.random_point(generator) if random_start else xb
            z, l_start = pgd_steps(grad, yb, ball, z0, steps=n_steps, alpha=step)
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
