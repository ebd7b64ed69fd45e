"""1-D and 2-D loss surfaces around trained weights, and the init → trained interpolation.

All three evaluate the batched ``Objective`` (see ``objective.py``): stacked
parameter sets go through one ``vmap``-ed ``functional_call`` per chunk. Results are
small, so they come back as CPU float64 tensors ready for plots and CSV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from engine.errors import ConfigError
from engine.landscape.directions import filter_normalized_direction
from engine.landscape.objective import LossFn, Params, losses_along, make_objective


@dataclass(frozen=True)
class Curve1D:
    """A 1-D loss curve: ``losses[k]`` = L at coordinate ``alphas[k]`` (both [K], CPU float64).

    For ``surface_1d`` the coordinate is α in θ* + αδ; for ``interpolate`` it is t in
    (1 − t)θ₀ + tθ*.
    """

    alphas: torch.Tensor
    losses: torch.Tensor


@dataclass(frozen=True)
class Surface2D:
    """A 2-D loss surface: ``losses[i, j]`` = L(θ* + alphas[i]·δ + betas[j]·η) (CPU float64).

    ``alphas`` [P], ``betas`` [Q], ``losses`` [P, Q].
    """

    alphas: torch.Tensor
    betas: torch.Tensor
    losses: torch.Tensor


def _grid(points: int, span: float, field: str) -> torch.Tensor:
    if not isinstance(points, int) or points < 2:
        raise ConfigError(field, points, "an integer ≥ 2 (odd puts α = 0 on the grid)")
    if not (span > 0 and math.isfinite(span)):
        raise ConfigError("span", span, "a positive finite number")
    # (2k − (P−1))/(P−1) rather than linspace: exactly symmetric, exactly 0 at the centre.
    k = torch.arange(points, dtype=torch.float64)
    return span * (2 * k - (points - 1)) / (points - 1)


def _check_direction(d: Params, params: Params, field: str) -> Params:
    if set(d) != set(params) or any(d[n].shape != p.shape for n, p in params.items()):
        raise ConfigError(field, sorted(d), f"one tensor per trainable parameter: {sorted(params)}")
    return {n: d[n].to(p.device, p.dtype) for n, p in params.items()}


def surface_1d(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    direction: Params | None = None,
    points: int = 41,
    span: float = 1.0,
    generator: torch.Generator | None = None,
    chunk: int | None = None,
    loss: LossFn | None = None,
    l2: float = 0.0,
) -> Curve1D:
    """L(θ* + αδ) for α on ``points`` evenly spaced values in [−span, span].

    x [n, d], y [n]; θ* is the model's current trainable weights. ``direction``
    defaults to ``filter_normalized_direction(model, generator)``. ``chunk``: points
    per vmap call (None: sized to ~512 MiB). ``loss``/``l2`` as in ``make_objective``.
    """
    alphas = _grid(points, span, "points")
    obj = make_objective(model, x, y, loss=loss, l2=l2)
    if direction is None:
        direction = filter_normalized_direction(model, generator)
    d = _check_direction(direction, obj.params, "direction")
    losses = losses_along(obj, obj.params, [d], alphas[:, None], chunk=chunk)
    return Curve1D(alphas, losses.detach().to("cpu", torch.float64))


def surface_2d(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    directions: tuple[Params, Params] | None = None,
    points: int = 21,
    span: float = 1.0,
    generator: torch.Generator | None = None,
    chunk: int | None = None,
    loss: LossFn | None = None,
    l2: float = 0.0,
) -> Surface2D:
    """L(θ* + αδ + βη) on a ``points`` × ``points`` grid of [−span, span]².

    ``directions`` defaults to two successive ``filter_normalized_direction`` draws
    from ``generator`` (not orthogonalised: random directions in high dimension
    are nearly orthogonal, as Li et al. note). Returns losses [points, points]
    indexed [α, β].
    """
    grid = _grid(points, span, "points")
    obj = make_objective(model, x, y, loss=loss, l2=l2)
    if directions is None:
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        directions = (filter_normalized_direction(model, g), filter_normalized_direction(model, g))
    if len(directions) != 2:
        raise ConfigError("directions", len(directions), "a pair (δ, η) of direction dicts")
    dirs = [_check_direction(d, obj.params, "directions") for d in directions]
    a, b = torch.meshgrid(grid, grid, indexing="ij")
    coeffs = torch.stack([a.reshape(-1), b.reshape(-1)], dim=1)
    losses = losses_along(obj, obj.params, dirs, coeffs, chunk=chunk)
    losses = losses.detach().to("cpu", torch.float64).reshape(points, points)
    return Surface2D(grid, grid.clone(), losses)


def interpolation_grid(points: int = 41, extend: float = 0.25) -> torch.Tensor:
    """t values: ``points`` evenly spaced on [0, 1] plus the same spacing out to ±extend.

    With the defaults: spacing 1/40 on [−0.25, 1.25], 61 values, t = 0 and t = 1
    exactly on the grid (the init and the trained weights).
    """
    if not isinstance(points, int) or points < 2:
        raise ConfigError("points", points, "an integer ≥ 2 (values of t on [0, 1])")
    if not (extend >= 0 and math.isfinite(extend)):
        raise ConfigError("extend", extend, "a number ≥ 0")
    extra = int(round(extend * (points - 1)))
    k = torch.arange(-extra, points + extra, dtype=torch.float64)
    return k / (points - 1)


def interpolate(
    model: nn.Module,
    init_state: dict[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    points: int = 41,
    extend: float = 0.25,
    chunk: int | None = None,
    loss: LossFn | None = None,
    l2: float = 0.0,
) -> Curve1D:
    """L((1 − t)θ₀ + tθ*) from the init θ₀ (t = 0) to the trained θ* (t = 1).

    ``init_state``: a state dict at initialisation (e.g. ``TrainedModel.init_state``,
    any device) holding at least every trainable parameter. t runs over
    ``interpolation_grid(points, extend)``: by default [−0.25, 1.25], so the curve
    also shows the loss just before the init and just past the minimum.
    """
    ts = interpolation_grid(points, extend)
    obj = make_objective(model, x, y, loss=loss, l2=l2)
    missing = [n for n in obj.params if n not in init_state]
    if missing:
        raise ConfigError("init_state", sorted(init_state), f"a state dict with {missing}")
    theta0 = {n: init_state[n].to(p.device, p.dtype) for n, p in obj.params.items()}
    step = {n: obj.params[n] - theta0[n] for n in obj.params}
    losses = losses_along(obj, theta0, [step], ts[:, None], chunk=chunk)
    return Curve1D(ts, losses.detach().to("cpu", torch.float64))


def curve_width(
    curve: Curve1D,
    delta: float = 0.1,
    *,
    mode: str = "absolute",
) -> float:
    """Width of the basin around α = 0: the length of the α-interval containing 0 where L ≤ c.

    ``mode="absolute"`` (default): c = L(0) + delta, in loss units.
    ``mode="range"``: c = L(0) + delta·(max L − min L) over the curve.
    L(0) is the loss at the grid point nearest α = 0. Crossings are linearly
    interpolated between grid points; if the curve stays under c up to an end of the
    grid, that end is used, so the width is at most the grid's length (a lower bound
    then). Note that the range mode is curvature-blind for a quadratic
    L = L(0) + hα²/2 (every h gives 2·span·√delta), so it cannot say which minimum is
    flatter; the absolute mode gives 2√(2·delta/h).
    """
    if not (delta > 0 and math.isfinite(delta)):
        raise ConfigError("delta", delta, "a positive number")
    a, lo = curve.alphas.double(), curve.losses.double()
    i0 = int(a.abs().argmin())
    if mode == "absolute":
        c = float(lo[i0]) + delta
    elif mode == "range":
        c = float(lo[i0]) + delta * float(lo.max() - lo.min())
    else:
        raise ConfigError("mode", mode, "absolute or range")

    def edge(idx: range) -> float:
        prev = i0
        for i in idx:
            if float(lo[i]) > c:  # crossing between prev and i
                f = (c - float(lo[prev])) / (float(lo[i]) - float(lo[prev]))
                return float(a[prev] + f * (a[i] - a[prev]))
            prev = i
        return float(a[prev])

    return edge(range(i0 + 1, a.numel())) - edge(range(i0 - 1, -1, -1))


def width_censored(curve: Curve1D, delta: float = 0.1) -> bool:
    """Whether ``curve_width(curve, delta)`` (absolute mode) is only a lower bound: the
    curve stays at or under L(0) + delta all the way from α = 0 to an end of the grid on
    either side (``curve_width``'s ``edge`` found no crossing there). A curve that rises
    past L(0) + delta and comes back under it at the grid's end has a finite basin."""
    lo = curve.losses.double()
    i0 = int(curve.alphas.double().abs().argmin())
    c = float(lo[i0]) + delta
    return bool((lo[i0:] <= c).all() or (lo[: i0 + 1] <= c).all())


@dataclass(frozen=True)
class BasinWidth:
    """``basin_width``'s answer: the width, whether it is still a lower bound, and the
    span of the grid that measured it."""

    width: float
    censored: bool
    span: float


def basin_width(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    direction: Params,
    points: int = 41,
    span: float = 1.0,
    delta: float = 0.1,
    max_span: float = 16.0,
    curve: Curve1D | None = None,
) -> BasinWidth:
    """``curve_width`` (absolute mode) along ``direction`` on a grid that widens until the
    basin closes: while the curve stays under L(0) + delta to a grid end
    (``width_censored``), the span doubles (and the points, so the spacing stays that of
    the first grid), up to ``max_span``; censored only when the basin is wider than that.
    ``curve``: the first grid's curve when the caller already has it (it is reused)."""
    if not (max_span >= span > 0):
        raise ConfigError("max_span", max_span, f"a number ≥ the span {span:g}")
    c = curve or surface_1d(model, x, y, direction=direction, points=points, span=span)
    while width_censored(c, delta) and span * 2 <= max_span:
        span, points = span * 2, 2 * points - 1
        c = surface_1d(model, x, y, direction=direction, points=points, span=span)
    return BasinWidth(curve_width(c, delta), width_censored(c, delta), span)
