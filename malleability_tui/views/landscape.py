"""What the Landscape panel shows: 1-D curves, 2-D surfaces and sharpness rows (pure)."""

from __future__ import annotations

import math
from typing import Any

from engine.results import mean_std
from engine.results.tables import LandscapeRow, SharpnessRow
from malleability_tui.text import number as fmt


def landscape_curves(rows: list[dict[str, Any]]) -> dict[str, tuple[list[float], list[float]]]:
    """1-D curves (rows without β): ``model direction`` → (α, loss), α sorted."""
    acc: dict[str, list[tuple[float, float]]] = {}
    for r in map(LandscapeRow.from_row, rows):
        if math.isfinite(r.beta):
            continue
        label = f"{r.model or '?'} {r.direction}".strip()
        acc.setdefault(label, []).append((r.alpha, r.loss))
    return {
        k: ([a for a, _ in sorted(v)], [b for _, b in sorted(v)]) for k, v in sorted(acc.items())
    }


def landscape_surfaces(rows: list[dict[str, Any]]) -> dict[str, list[list[float]]]:
    """2-D surfaces (rows with β): model → grid[i_β][j_α] of the loss."""
    acc: dict[str, dict[tuple[float, float], float]] = {}
    for r in map(LandscapeRow.from_row, rows):
        if not math.isfinite(r.beta):
            continue
        acc.setdefault(r.model or "?", {})[(r.beta, r.alpha)] = r.loss
    out = {}
    for model, pts in sorted(acc.items()):
        betas = sorted({b for b, _ in pts})
        alphas = sorted({a for _, a in pts})
        out[model] = [[pts.get((b, a), math.nan) for a in alphas] for b in betas]
    return out


def landscape_axes(rows: list[dict[str, Any]], model: str) -> tuple[list[float], list[float]]:
    """The sorted α (columns) and β (rows) of ``model``'s 2-D surface."""
    pts = [
        (r.alpha, r.beta)
        for r in map(LandscapeRow.from_row, rows)
        if (r.model or "?") == model and math.isfinite(r.beta)
    ]
    return sorted({a for a, _ in pts}), sorted({b for _, b in pts})


def sharpness_rows(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(model, seeds, top eigenvalue mean ± std, trace mean ± std)."""
    by: dict[str, list[SharpnessRow]] = {}
    for r in map(SharpnessRow.from_row, rows):
        by.setdefault(r.model or "?", []).append(r)
    out = []
    for model, rs in sorted(by.items()):
        e, es, n = mean_std(r.hessian_top_eig for r in rs)
        t, ts, _ = mean_std(r.hessian_trace for r in rs)
        pm = (lambda m, sd: fmt(m)) if n <= 1 else (lambda m, sd: f"{fmt(m)} ± {fmt(sd, 2)}")
        out.append((model, str(n), pm(e, es), pm(t, ts)))
    return out
