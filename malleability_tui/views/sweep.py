"""What the Sweep panel plots: which column of ntk_distance.csv leads (pure, no Textual)."""

from __future__ import annotations

from typing import Any

from engine.results import series_over_seeds
from engine.results.tables import typed_rows
from malleability_tui.text import MISSING, number

COLUMNS = (
    "lin_distance_rel",
    "ntk_distance",
    "ntk_distance_rel",
    "kernel_distance_final",
    "kernel_drift",
    "test_accuracy",
)
"""The columns ``m`` cycles through, the well-posed one first."""

LEAD = "lin_distance_rel"
"""‖f − f_lin‖/‖f‖ against the model's own linearization: the quantity that is well posed
at every width (the analytic-NTK distance needs the infinite-width kernel of the model)."""


def has_values(rows: list[dict[str, Any]], column: str) -> bool:
    """Whether any row has a number in ``column`` (runs before the linearized twin lack it)."""
    return any(number(r.get(column)) != MISSING for r in rows)


def sweep_column(rows: list[dict[str, Any]], chosen: str = "") -> str:
    """The column to plot: the one the user chose (``m``), else ``lin_distance_rel`` where the
    run has it, else ``ntk_distance``."""
    if chosen:
        return chosen
    return LEAD if has_values(rows, LEAD) else "ntk_distance"


def next_column(current: str) -> str:
    """The column after ``current`` in ``COLUMNS``."""
    i = COLUMNS.index(current) if current in COLUMNS else -1
    return COLUMNS[(i + 1) % len(COLUMNS)]


def sweep_series(
    rows: list[dict[str, Any]], column: str = "ntk_distance", table: str = "ntk_distance"
) -> dict[str, tuple[list[int], list[float], list[float], list[int]]]:
    """model → (widths, mean, sample std, n seeds) of ``column`` over seeds, widths sorted
    (``engine.results.series_over_seeds`` over ``table``'s typed rows)."""
    return {
        m: ([int(w) for w in ser.x], ser.mean, ser.std, ser.n)
        for m, ser in series_over_seeds(typed_rows(table, rows), "width", column).items()
    }
