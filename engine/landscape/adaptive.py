"""Adaptive sharpness (Kwon et al. 2021, ASAM; docs/protocol.md#landscape).

    S_ρ(w) = max over ‖T_w⁻¹ ε‖₂ ≤ ρ of L(w + ε) − L(w),  T_w = diag(|w| + η)

Written with ε = T_w ⊙ u, ‖u‖₂ ≤ ρ, so no inverse is needed (a weight at exactly 0 then
stays put when η = 0). Under any elementwise rescaling w → c ⊙ w (c > 0) that leaves
the function unchanged (the ReLU's w_r → c_r·w_r, a_r → a_r/c_r), T_{cw} = c ⊙ T_w and
∇_{cw} = ∇_w / c, so with η = 0 every iterate below maps onto the unscaled one and S_ρ
is unchanged, while the top Hessian eigenvalue moves (by up to max c²). η > 0 (the paper
takes 0.01 with weights of order 1) breaks that by about η/|w|; this project's trained
weights are of order σ_w = 0.01, so η defaults to 0. The models here have no biases
(the paper leaves biases unscaled, T = 1).

The maximum is estimated by projected gradient ascent in u, deterministic given the
seed: u₀ = ρ·ĝ (ASAM's one step, ĝ the unit gradient of u ↦ L(w + T ⊙ u) at 0; a
seeded random direction when that gradient vanishes), then ``steps − 1`` steps
u ← Π_ρ(u + ρ·ĝ(u)), Π_ρ the projection onto the ball. A fixed point on the sphere has
u ∝ ∇, the first-order condition of the maximum; the largest rise seen is returned.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import grad_and_value

from engine.errors import ConfigError
from engine.landscape.objective import LossFn, make_objective

ADAPTIVE_RHO = 0.5
"""Radius ρ of the adaptive ball (Kwon et al. 2021's CIFAR-10 choice for ASAM)."""
ADAPTIVE_STEPS = 10
"""Projected gradient-ascent steps (the first is ASAM's own)."""
ADAPTIVE_ETA = 0.0
"""η of T_w = |w| + η: 0 keeps the measure exactly invariant (module docstring)."""


@dataclass(frozen=True)
class AdaptiveSharpness:
    """``value``: the largest L(w + ε) − L(w) found; ``history``: the rise at each
    iterate u₀ … u_{steps−1}; ``converged``: the last step moved the rise by at most
    ``tol`` relative (and 1e-12 absolute)."""

    value: float
    rho: float
    eta: float
    steps: int
    converged: bool
    history: tuple[float, ...]


def adaptive_sharpness_flat(
    fn: Callable[[torch.Tensor], torch.Tensor],
    theta: torch.Tensor,
    *,
    rho: float = ADAPTIVE_RHO,
    steps: int = ADAPTIVE_STEPS,
    eta: float = ADAPTIVE_ETA,
    generator: torch.Generator | None = None,
    tol: float = 1e-3,
) -> AdaptiveSharpness:
    """S_ρ of a scalar function ``fn`` of a flat vector, at ``theta`` [P] (module
    docstring); ``generator`` draws the start only when the gradient at ``theta`` is 0."""
    if not (isinstance(rho, (int, float)) and rho > 0):
        raise ConfigError("rho", rho, "a number > 0")
    if not (isinstance(steps, int) and steps >= 1):
        raise ConfigError("steps", steps, "an integer ≥ 1")
    if not eta >= 0:
        raise ConfigError("eta", eta, "a number ≥ 0")
    theta = theta.detach()
    scale = theta.abs() + eta
    base = float(fn(theta))
    step = grad_and_value(lambda u: fn(theta + scale * u))

    def unit(g: torch.Tensor) -> torch.Tensor | None:
        n = float(torch.linalg.vector_norm(g))
        return g / n if n > 0 and n == n else None

    g0, _ = step(torch.zeros_like(theta))
    d = unit(g0)
    if d is None:  # at a stationary point: a seeded random start
        r = torch.randn(theta.shape, generator=generator, dtype=theta.dtype).to(theta.device)
        d = unit(r * (scale > 0))
        if d is None:
            return AdaptiveSharpness(0.0, float(rho), float(eta), steps, True, (0.0,))
    u = rho * d
    history: list[float] = []
    for k in range(steps):
        g, val = step(u)
        history.append(float(val) - base)
        if k == steps - 1:
            break
        gd = unit(g)
        if gd is None:
            break
        v = u + rho * gd
        u = v * min(1.0, rho / float(torch.linalg.vector_norm(v)))
    last = history[-2:]
    converged = len(last) == 1 or abs(last[1] - last[0]) <= max(tol * abs(last[1]), 1e-12)
    return AdaptiveSharpness(max(history), float(rho), float(eta), steps, converged, tuple(history))


def adaptive_sharpness(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    rho: float = ADAPTIVE_RHO,
    steps: int = ADAPTIVE_STEPS,
    eta: float = ADAPTIVE_ETA,
    generator: torch.Generator | None = None,
    loss: LossFn | None = None,
    dtype: torch.dtype = torch.float64,
) -> AdaptiveSharpness:
    """S_ρ of the full-batch training loss of ``model`` (trainable parameters only, no
    L2 term; ``engine.landscape.objective``) on x [n, d], y [n]. Evaluated on a copy in
    ``dtype`` (float64: a rise of 1e-4 on a loss of order 1 is below float32's noise);
    the model itself is not changed."""
    work = copy.deepcopy(model).to(dtype)
    obj = make_objective(work, x, y, loss=loss)
    theta = obj.flatten(obj.params)
    return adaptive_sharpness_flat(
        obj.flat_fn(), theta, rho=rho, steps=steps, eta=eta, generator=generator
    )
