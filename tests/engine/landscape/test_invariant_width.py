"""Claim 6's invariant flatness (docs/claims.md#claim-6): the filter-normalised basin
width does not move under a function-preserving rescaling of a ReLU net, λ_max does."""

from __future__ import annotations

import math

import torch

from engine.landscape import (
    curve_width,
    filter_normalized_direction,
    hessian_top_eigenvalue,
    surface_1d,
    width_censored,
)
from engine.models import build_model
from engine.train import data_loss

F64 = torch.float64


def _trained(seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    """A 2L-ReLU with a trainable output layer fitted a little (Adam) on random data."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(40, 5, generator=g, dtype=F64)
    y = torch.randint(0, 3, (40,), generator=g)
    model = build_model("relu", x, 16, 3, sigma_w=1.0, train_output=True, dtype=F64, seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        opt.zero_grad()
        data_loss(model(x), y).backward()
        opt.step()
    return model, x, y


def _rescaled(model: torch.nn.Module, c: torch.Tensor) -> torch.nn.Module:
    """w_r → c_r·w_r, a_r → a_r/c_r (c_r > 0): the same function (ReLU is 1-homogeneous)."""
    import copy

    m = copy.deepcopy(model)
    with torch.no_grad():
        m.weight.mul_(c[:, None])
        m.output.div_(c[:, None])
    return m


def _measures(model, x, y) -> tuple[float, float, bool]:
    d = filter_normalized_direction(model, torch.Generator().manual_seed(3))
    curve = surface_1d(model, x, y, direction=d, points=201, span=1.0)
    lam = hessian_top_eigenvalue(model, x, y, method="lanczos", iters=60, tol=1e-8).value
    return curve_width(curve, 0.1), lam, width_censored(curve, 0.1)


def test_width_is_invariant_and_lambda_max_is_not() -> None:
    model, x, y = _trained()
    w0, lam0, cens0 = _measures(model, x, y)
    assert 0 < w0 < 2.0 and not cens0  # a finite basin inside the grid: the test can fail
    for c in (torch.full((16,), 4.0, dtype=F64), torch.linspace(0.25, 5.0, 16, dtype=F64)):
        other = _rescaled(model, c)
        torch.testing.assert_close(other(x), model(x))  # the same function
        w1, lam1, _ = _measures(other, x, y)
        assert math.isclose(w1, w0, rel_tol=1e-9)
        assert not math.isclose(lam1, lam0, rel_tol=0.1)  # raw sharpness moves


def test_width_censored_says_when_the_basin_reaches_the_grid() -> None:
    from engine.landscape import Curve1D

    a = torch.linspace(-1, 1, 101, dtype=F64)
    assert width_censored(Curve1D(a, 0.05 * a**2), 0.1)
    assert not width_censored(Curve1D(a, 5 * a**2), 0.1)


def test_a_second_well_at_the_grid_end_is_not_censored() -> None:
    """The basin ends where the loss first passes L(0) + delta (``curve_width``): a loss
    that falls back under it near the grid's end (another well) leaves it finite."""
    from engine.landscape import Curve1D

    a = torch.linspace(-1, 1, 101, dtype=F64)
    double_well = torch.sin(2 * math.pi * a) ** 2  # zero at 0 and at ±0.5 and ±1
    curve = Curve1D(a, double_well)
    w = curve_width(curve, 0.1)
    assert 0 < w < 0.5  # the central well only
    assert not width_censored(curve, 0.1)


def test_basin_width_widens_the_grid_until_the_basin_closes() -> None:
    """A direction shrunk 8× makes the same basin 8× wider in α: at span 1 it reaches the
    grid's end (censored), ``basin_width`` doubles the grid (same spacing) until it
    closes and finds 8× the width along the full direction; capped, it stays censored."""
    from engine.landscape import basin_width

    model, x, y = _trained()
    d = filter_normalized_direction(model, torch.Generator().manual_seed(3))
    full = basin_width(model, x, y, direction=d, points=201, span=1.0)
    assert not full.censored and full.span == 1.0 and 0 < full.width < 2.0
    small = {n: v / 8 for n, v in d.items()}
    first = surface_1d(model, x, y, direction=small, points=201, span=1.0)
    assert width_censored(first, 0.1)  # the old answer: a lower bound only
    wide = basin_width(model, x, y, direction=small, points=201, span=1.0, curve=first)
    assert not wide.censored and wide.span in (2.0, 4.0, 8.0, 16.0)
    assert math.isclose(wide.width, 8 * full.width, rel_tol=2e-2)
    capped = basin_width(model, x, y, direction=small, points=201, span=0.25, max_span=1.0)
    assert capped.censored and capped.span == 1.0 and capped.width <= 2.0 + 1e-12


def test_a_sharpness_table_from_before_the_width_columns_reads(tmp_path) -> None:
    """Runs written before width_1d, width_delta (claim 6's measure) and width_span read
    with those columns missing (docs/architecture.md's migrations), not as damaged; any
    other missing column is still damage."""
    import pytest

    from engine.results.tables import SharpnessRow
    from engine.run.validate import DamagedRun, read_csv_table

    old = tmp_path / "sharpness.csv"
    old.write_text("model,seed,hessian_top_eig,hessian_trace\n2L-ReLU,0,1.5,3.0\n")
    rows = read_csv_table(old, SharpnessRow)
    assert rows[0]["hessian_top_eig"] == "1.5" and "width_span" not in rows[0]
    old.write_text("model,seed,hessian_trace\n2L-ReLU,0,3.0\n")
    with pytest.raises(DamagedRun, match="hessian_top_eig"):
        read_csv_table(old, SharpnessRow)
