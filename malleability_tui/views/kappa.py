"""What the Spectra panel plots for a ``kappa_sweep`` run (pure): the flip rate against
κ(G), log x, per model, and the points whose effect failed a guard, listed apart, never
plotted (docs/protocol.md#kappa-sweep)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from engine.results.kappa import interval, ok
from engine.results.tables import KappaSweepRow


class KappaPoints(NamedTuple):
    """One model's points of ``column`` against κ(G), sorted by κ(G)."""

    model: str
    kappa: list[float]
    values: list[float]
    errors: list[float]
    """Half the width of each point's 95 % interval (0 where there is none)."""


def kappa_points(rows: list[dict[str, Any]], column: str = "flip_rate") -> list[KappaPoints]:
    """Per model (in row order), the points whose effect passed its guards."""
    typed = [KappaSweepRow.from_row(r) for r in rows]
    out = []
    for model in dict.fromkeys(r.model for r in typed):
        sel = sorted(
            (
                r
                for r in typed
                if r.model == model
                and ok(r, column)
                and r.kappa_G > 0
                and math.isfinite(getattr(r, column))
            ),
            key=lambda r: r.kappa_G,
        )
        if sel:
            err = [_half_width(interval(r, column)) for r in sel]
            out.append(
                KappaPoints(model, [r.kappa_G for r in sel], [getattr(r, column) for r in sel], err)
            )
    return out


def _half_width(iv: tuple[float, float] | None) -> float:
    return 0.0 if iv is None else (iv[1] - iv[0]) / 2


def failed_points(rows: list[dict[str, Any]], column: str = "flip_rate") -> list[str]:
    """``α 0 MLP-Attn`` for each point whose ``column`` failed a guard (not plotted)."""
    typed = [KappaSweepRow.from_row(r) for r in rows]
    return [f"α {r.alpha:g} {r.model}" for r in typed if not ok(r, column)]
