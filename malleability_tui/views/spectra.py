"""What the Spectra panel plots: λ(G) in full, λ(G³) down to the numerical rank (pure).

Beyond G's numerical rank its eigenvalues are rounding noise (~1e-16 of the largest); cubed
they fall 30 more decades and would set the plot's scale with numbers that mean nothing.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from engine.results import num
from malleability_tui.text import number as fmt
from malleability_tui.views.flips import task_of


class SpectraView(NamedTuple):
    """Index and eigenvalues per curve; ``rank`` where λ(G³) is cut (None: not known)."""

    idx: list[int]
    eig_g: list[float]
    eig_g3: list[float]
    rank: int | None


def spectrum_rank(rows: list[dict[str, Any]], dataset: str = "") -> int | None:
    """The numerical rank of ``dataset``'s row in spectrum.csv (the first row when ""),
    None when the run has none."""
    for row in rows:
        if not dataset or str(row.get("dataset", "")) == dataset:
            r = num(row.get("rank"))
            return int(r) if math.isfinite(r) and r > 0 else None
    return None


def spectra_view(eig_g: list[float], eig_g3: list[float], rank: int | None) -> SpectraView:
    """λ(G) as measured; λ(G³) only for the indices 1..rank (all when the rank is unknown)."""
    idx = list(range(1, len(eig_g) + 1))
    cut = len(eig_g3) if rank is None else min(rank, len(eig_g3))
    return SpectraView(idx, list(eig_g), list(eig_g3[:cut]), rank)


def orders_beyond(m: float, reference: float = 1e12) -> float:
    return math.log10(m / reference) if m > 0 and math.isfinite(m) else math.nan


ORDERS_NOTE = (
    "orders = log₁₀(width needed / 10¹²): how many powers of ten the width lies beyond "
    "today's largest models (~10¹² parameters)"
)


def kappa_d_text(row: dict[str, Any]) -> str:
    """κ_d, or ``∞ (rank r < min(n, d))`` when the truncation still holds a zero eigenvalue."""
    kd = num(row.get("kappa_d"))
    n, d, r = num(row.get("n")), num(row.get("d")), num(row.get("rank"))
    if math.isfinite(kd):
        return fmt(kd)
    if math.isfinite(r) and math.isfinite(n) and math.isfinite(d) and r < min(n, d):
        return f"∞ (rank {int(r)} < min(n, d) = {int(min(n, d))})"
    return "∞" if math.isinf(kd) else "–"


def spectrum_lines(
    row: dict[str, Any], largest: float = 1e12, classes: Any = None
) -> list[tuple[str, str]]:
    """(label, value) pairs of one ``spectrum`` row: ours, then the paper's where it has one.

    Thresholds carry how many orders of magnitude they lie beyond ``largest`` (see
    ``ORDERS_NOTE``); the paper's κ and bounds come from ``engine.spectral.paper_spectrum``.
    """
    from engine.spectral import paper_spectrum

    name = str(row.get("dataset", "?"))
    paper = paper_spectrum(task_of(name)[0], tuple(classes) if classes else None)
    out = [
        ("data set", name),
        ("n × d, rank", f"{fmt(row.get('n'))} × {fmt(row.get('d'))}, rank {fmt(row.get('rank'))}"),
        (
            "κ(G) at rank",
            fmt(row.get("kappa_G")) + (f"   paper ≈ {fmt(paper.kappa, 2)}" if paper else ""),
        ),
        ("κ(G)³", fmt(row.get("kappa_G_cubed"))),
        ("κ(G³) measured", fmt(row.get("kappa_G3_direct"))),
        ("κ_d", kappa_d_text(row)),
    ]
    # the κ each threshold was computed from, as shown above (engine.spectral.thresholds:
    # v2 falls back to κ(G) when κ_d is infinite)
    v2_kappa = "κ_d" if math.isfinite(num(row.get("kappa_d"))) else "κ(G)"
    for key, label, pv in (
        ("width_threshold_v1", "m ≥ κ(G)⁶ (v1)", paper.m_v1 if paper else None),
        ("width_threshold_v2", f"m ≥ {v2_kappa}⁶ n ln n (v2)", paper.m_v2 if paper else None),
    ):
        m = num(row.get(key))
        o = orders_beyond(m, largest)
        text = fmt(m) + (f"  {o:+.1f} orders" if math.isfinite(o) else "")
        if pv is not None:
            text += f"   paper ≫ {fmt(pv, 2)}"
        out.append((label, text))
    return out


def stat_block(lines: list[tuple[str, str]], width: int) -> list[str]:
    """``(label, value)`` pairs as rich markup lines of at most ``width`` columns, none
    wrapped inside a value: ``label  value`` (labels aligned as far as the width lets) where that fits, else the
    label on its own line and the value under it, indented, one piece a line (a value's
    pieces are the parts it separates by two spaces or more: number, orders, paper)."""
    import re

    from rich.markup import escape

    fits = [len(k) for k, v in lines if len(k) + 2 + len(v) <= width]
    lab_w = max(fits, default=0)
    out = []
    for k, v in lines:
        if len(k) + 2 + len(v) <= width:
            pad = max(len(k), min(lab_w, width - 2 - len(v)))
            out.append(f"[b]{escape(k.ljust(pad))}[/b]  {escape(v)}")
            continue
        out.append(f"[b]{escape(k)}[/b]")
        out.extend(f"  {escape(piece)}" for piece in re.split(r"\s{2,}", v.strip()))
    return out
