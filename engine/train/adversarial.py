"""Adversarial training: the perturbation the training loop applies.

Two recipes share one iterate (``engine.attacks.pgd.pgd_steps``): PGD adversarial
training (Madry et al., 2018; ``make_pgd_perturb``) and FGSM from a random start
("fast adversarial training", Wong, Rice & Kolter 2020; ``make_fgsm_rs_perturb``), which
is PGD with one step of α = 1.25·ε from a uniform point of the ε-ball: one input
gradient a mini-batch instead of ``steps``.

``engine.train.loop.train(..., perturb=make_pgd_perturb(...))`` calls
``perturb(model, xb, yb)`` on every mini-batch of raw pixel inputs [b, d] in [0, 1]
before the forward/backward pass, and trains on what it returns: the inner
maximisation of min_θ E max_{‖δ‖≤ε} L(θ; x + δ). The attack runs the model in eval
mode and restores each module's mode afterwards, writes no parameter gradients, and
(for MLP-Attn) keeps the attention's context C fixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from engine.attacks.base import (
    DEFAULT_ENGINE,
    Ball,
    LossFn,
    check_count,
    check_engine,
    check_norm,
    check_positive,
    gradient,
    run_batched,
)
from engine.attacks.pgd import pgd_steps, resolve_alpha
from engine.models import closed_form
from engine.train.base import Perturb


def make_pgd_perturb(
    eps: float = 0.3,
    steps: int = 40,
    alpha: float | None = None,
    random_start: bool = True,
    norm: str = "linf",
    generator: torch.Generator | None = None,
    *,
    loss_fn: LossFn | None = None,
    batch_size: int = 1024,
    engine: str = DEFAULT_ENGINE,
) -> Perturb:
    """A ``perturb(model, xb [b, d], yb [b]) → xb_adv [b, d]`` running PGD on the training loss.

    Same iterate as ``engine.attacks.pgd`` with one restart, but it skips the two
    loss evaluations (before/after) that training does not need; ``alpha`` None:
    2.5·ε / steps (``engine.attacks.pgd.madry_step``). ``generator`` (seeded
    by the caller) drives the random starts, so a run is reproducible. ``engine``: the
    input gradient's path (``engine.attacks.base.gradient``: the closed form of 2L-ReLU and
    MLP-Attn under "fused", autograd otherwise), read from the model's weights at each
    call. Options are checked here, before training starts.
    """
    check_positive("eps", eps)
    check_norm(norm)
    n_steps = check_count("steps", steps)
    step = check_positive("alpha", resolve_alpha(alpha, eps, n_steps))
    check_count("batch_size", batch_size)
    check_engine(engine)

    def perturb(model: nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        grad = gradient(model, loss_fn, engine)

        def one(x: torch.Tensor, y: torch.Tensor):
            ball = Ball(x, eps, norm)
            z0 = ball.random_point(generator) if random_start else x
            z, _ = pgd_steps(grad, y, ball, z0, steps=n_steps, alpha=step)
            none = x.new_empty((0,))
            return z, none, none

        return run_batched(model, xb, yb, one, eps=eps, batch_size=batch_size).x_adv

    if engine == "fused" and loss_fn is None:  # ``perturb_stacked`` may run it stacked
        perturb.pgd = PGDRecipe(float(eps), n_steps, step, random_start, norm, generator)  # type: ignore[attr-defined]
    return perturb


@dataclass(frozen=True)
class PGDRecipe:
    """What a ``make_pgd_perturb`` perturbation does (on the closed-form gradient, under
    the training loss), kept on it as ``perturb.pgd`` so that ``perturb_stacked`` can run
    several networks' perturbations as one stacked iterate."""

    eps: float
    steps: int
    alpha: float
    random_start: bool
    norm: str
    generator: torch.Generator | None = field(compare=False)


def perturb_stacked(
    perturbs: Sequence[Perturb],
    models: Sequence[nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    head: closed_form.StackedHead | None = None,
) -> torch.Tensor | None:
    """``perturbs[b](models[b], x[b], y[b])`` for every b at once: x [B, b, d] raw pixels,
    y [B, b] → x_adv [B, b, d]; None when they cannot run stacked (not all closed-form
    PGD of one recipe, ``PGDRecipe``). ``head``: the models' weights already stacked
    (``stacked_recipe`` held; a chunk's own [B, ...] tensors, without copying them
    into the models and stacking them again a step), else ``closed_form.stack(models)``.
    Each network draws its random start from its own generator as alone (the ℓ∞ box's
    arithmetic then runs once over all B·b rows), then one iterate takes every network's
    steps: the input gradient of the stacked networks (``engine.models.closed_form.InputGrad``,
    batched matmuls, the loss not computed) and the ball's projection over all B·b rows
    (row-wise, so network b's rows see only network b's ball). The same points as the
    separate calls, up to the rounding of a batched matmul (float64:
    ``tests/engine/train/test_batched_adversarial.py``)."""
    r0 = stacked_recipe(perturbs)
    if r0 is None:
        return None
    net = head if head is not None else closed_form.stack(models)
    if net is None:
        return None
    grad_fn = closed_form.InputGrad(net)
    nb, rows = y.shape
    flat = x.reshape(nb * rows, -1)
    ball = Ball(flat, r0.eps, r0.norm)
    gens = [getattr(p, "pgd", r0).generator for p in perturbs]  # each network's own
    if not r0.random_start:
        z0 = flat
    elif r0.norm == "linf":  # Ball.random_point's draws, network by network, then its box
        u = torch.stack([_uniform(flat[:rows], q) for q in gens])
        z0 = ball.project(flat + (2.0 * u.view_as(flat) - 1.0) * r0.eps)
    else:
        z0 = torch.cat(
            [
                Ball(flat[b * rows : (b + 1) * rows], r0.eps, r0.norm).random_point(q)
                for b, q in enumerate(gens)
            ]
        )
    onehot = None
    if not torch.is_floating_point(y):
        onehot = closed_form.minus_onehot(y, net.a.shape[-1], x.dtype)
    none = x.new_empty((0,))

    def grad(z: torch.Tensor, _: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        g, loss = grad_fn(z.view(nb, rows, -1), y, onehot)
        return g.reshape(nb * rows, -1), none if loss is None else loss.reshape(-1)

    z, _ = pgd_steps(grad, y.reshape(-1), ball, z0, steps=r0.steps, alpha=r0.alpha)
    return z.view_as(x)


def _uniform(like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """``Ball.random_point``'s ℓ∞ draw for rows shaped ``like`` [b, d] (the same numbers)."""
    dev = generator.device if generator is not None else like.device
    u = torch.rand(like.shape, generator=generator, device=dev, dtype=like.dtype)
    return u.to(like.device)


def stacked_recipe(perturbs: Sequence[Perturb]) -> PGDRecipe | None:
    """The one closed-form PGD recipe every perturbation of ``perturbs`` runs
    (``make_pgd_perturb(..., engine="fused")``), or None when they cannot run stacked."""
    recipes = [getattr(p, "pgd", None) for p in perturbs]
    r0 = recipes[0] if recipes else None
    if r0 is None or any(r != r0 for r in recipes):
        return None
    return r0


FGSM_RS_STEP = 1.25
"""Wong et al. (2020): FGSM-RS step α = 1.25·ε (larger steps lead to catastrophic overfitting)."""


def make_fgsm_rs_perturb(
    eps: float = 0.3,
    alpha: float | None = None,
    norm: str = "linf",
    generator: torch.Generator | None = None,
    *,
    loss_fn: LossFn | None = None,
    batch_size: int = 1024,
    engine: str = DEFAULT_ENGINE,
) -> Perturb:
    """FGSM with a random start (Wong et al., 2020): δ₀ ~ U(ε-ball), one signed-gradient
    step of ``alpha`` (None: ``FGSM_RS_STEP``·ε), projected back onto the ball."""
    step = resolve_adv_alpha("fgsm_rs", alpha, eps, 1)
    return make_pgd_perturb(
        eps, 1, step, True, norm, generator, loss_fn=loss_fn, batch_size=batch_size, engine=engine
    )


def resolve_adv_alpha(recipe: str, alpha: float | None, eps: float, steps: int) -> float:
    """The step of adversarial-training ``recipe``: ``alpha``, or the recipe's default
    (pgd: 2.5·ε/steps, Madry et al.; fgsm_rs: ``FGSM_RS_STEP``·ε, Wong et al.)."""
    if alpha is not None:
        return float(alpha)
    return FGSM_RS_STEP * float(eps) if recipe == "fgsm_rs" else resolve_alpha(None, eps, steps)


def make_perturb(
    recipe: str,
    eps: float,
    steps: int,
    alpha: float | None,
    *,
    random_start: bool = True,
    norm: str = "linf",
    generator: torch.Generator | None = None,
    engine: str = DEFAULT_ENGINE,
) -> Perturb:
    """The perturbation of adversarial-training ``recipe`` (``pgd`` or ``fgsm_rs``;
    ``steps`` is ignored by fgsm_rs; ``engine``: the input gradient's path): the one
    place a spec's recipe becomes a perturb."""
    if recipe == "fgsm_rs":
        return make_fgsm_rs_perturb(eps, alpha, norm, generator, engine=engine)
    if recipe == "pgd":
        return make_pgd_perturb(eps, steps, alpha, random_start, norm, generator, engine=engine)
    raise ValueError(f"invalid adversarial-training recipe {recipe!r}: pgd or fgsm_rs")


__all__ = [
    "FGSM_RS_STEP",
    "Perturb",
    "resolve_adv_alpha",
    "make_fgsm_rs_perturb",
    "make_perturb",
    "make_pgd_perturb",
    "perturb_stacked",
    "stacked_recipe",
    "PGDRecipe",
]
