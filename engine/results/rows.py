"""Reading table cells and grouping rows: the helpers every consumer of a run's tables shares.

Rows are dicts as they come from the event stream (numbers, None for missing) or from a
CSV read back from disk (strings, "" for missing); ``num`` reads both, so a statistic
gives the same answer on a live run and on one reopened from disk.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from engine.results.stats import mean_std
from engine.results.tables import Row as TypedRow

Row = Mapping[str, Any] | TypedRow
"""A table row: a dict (event or CSV) or a typed row of ``engine.results.tables``."""


def cell(r: Row, column: str) -> Any:
    """Column ``column`` of a row, dict or typed (None when it has none)."""
    return getattr(r, column, None) if isinstance(r, TypedRow) else r.get(column)


def num(v: Any) -> float:
    """A table cell as a float (NaN when empty, None or not a number)."""
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(str(v))
    except (TypeError, ValueError):
        return math.nan


class Series(NamedTuple):
    """One curve over seeds: x values (sorted) with mean, sample std and count of y."""

    x: list[float]
    mean: list[float]
    std: list[float]
    n: list[int]


def series_over_seeds(
    rows: Iterable[Row], x: str = "width", y: str = "ntk_distance", by: str = "model"
) -> dict[str, Series]:
    """``by`` value → ``Series`` of ``y`` over the rows sharing each ``x`` (e.g. the NTK
    distance per width over seeds, per model); groups sorted by name, x ascending."""
    acc: dict[str, dict[float, list[float]]] = {}
    for r in rows:
        xv = num(cell(r, x))
        if math.isfinite(xv):
            group = cell(r, by)
            acc.setdefault("?" if group is None else str(group), {}).setdefault(xv, []).append(
                num(cell(r, y))
            )
    out = {}
    for key in sorted(acc):
        xs = sorted(acc[key])
        st = [mean_std(acc[key][v]) for v in xs]
        out[key] = Series(xs, [s.mean for s in st], [s.std for s in st], [s.n for s in st])
    return out


def flip_text(mean: float, std: float, lo: float, hi: float, scale: float = 100.0) -> str:
    """``12.3 ± 1.4 [10.1, 14.9]``: mean ± sample std over seeds and the pooled 95%
    interval, in percent (inputs are fractions × ``scale``); the one format the
    summaries' headlines, ``reproduce``, the report and the TUI print."""
    if not math.isfinite(mean):
        return "–"
    out = f"{scale * mean:.1f}"
    if math.isfinite(std) and std > 0:
        out += f" ± {scale * std:.1f}"
    if math.isfinite(lo) and math.isfinite(hi):
        out += f" [{scale * lo:.1f}, {scale * hi:.1f}]"
    return out
