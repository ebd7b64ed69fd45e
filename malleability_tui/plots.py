"""Dependency-free terminal plots: braille line charts and half-block heatmaps.

Pure functions returning ``rich.text.Text``, so they are deterministic (snapshot
tests), cheap, and unit-testable without an app. Axes may be log-scaled: values
are transformed before plotting and tick labels show the original values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.color import Color
from rich.style import Style
from rich.text import Text

# Braille dot bits for (column, row) inside one 2×4 character cell.
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
PALETTE = ("cyan", "magenta", "yellow", "green", "red", "blue")


@dataclass
class Series:
    """One line of a chart: points (x, y), optional symmetric error bars."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    err: Sequence[float] | None = None
    color: str = ""
    points: bool = False
    """Also mark each point with a bold dot cell (sparse data such as widths)."""


@dataclass
class Axis:
    log: bool = False
    """Plot log10 of the values (non-positive values are dropped)."""
    log2: bool = False
    """Plot log2 of the values (width sweeps); ticks show 2^k."""
    ticks: Sequence[float] | None = None
    label: str = ""
    lo: float | None = None
    hi: float | None = None


@dataclass
class _Canvas:
    w: int
    h: int
    bits: list[list[int]] = field(default_factory=list)
    color: list[list[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.bits = [[0] * self.w for _ in range(self.h)]
        self.color = [[""] * self.w for _ in range(self.h)]

    def dot(self, px: int, py: int, color: str) -> None:
        cx, cy = px // 2, py // 4
        if 0 <= cx < self.w and 0 <= cy < self.h and px >= 0 and py >= 0:
            self.bits[cy][cx] |= _DOTS[px % 2][py % 4]
            self.color[cy][cx] = color

    def line(self, x0: int, y0: int, x1: int, y1: int, color: str) -> None:
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for i in range(n + 1):
            self.dot(round(x0 + (x1 - x0) * i / n), round(y0 + (y1 - y0) * i / n), color)


def _tf(v: float, ax: Axis) -> float | None:
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    if ax.log or ax.log2:
        if v <= 0:
            return None
        return math.log2(v) if ax.log2 else math.log10(v)
    return float(v)


def fmt_num(v: float) -> str:
    """Compact tick label: 3 significant digits, exponent form when large/small."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        m, e = f"{v:.1e}".split("e")
        return f"{m.rstrip('0').rstrip('.')}e{int(e)}"
    if a >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def _range(vals: list[float], lo: float | None, hi: float | None) -> tuple[float, float]:
    a = min(vals) if lo is None else lo
    b = max(vals) if hi is None else hi
    if a == b:
        pad = abs(a) * 0.1 or 1.0
        a, b = a - pad, b + pad
    return a, b


def _inv(t: float, ax: Axis) -> float:
    if ax.log2:
        return 2.0**t
    if ax.log:
        return 10.0**t
    return t


def line_chart(
    series: Sequence[Series],
    width: int,
    height: int,
    *,
    x: Axis | None = None,
    y: Axis | None = None,
    title: str = "",
    empty: str = "waiting for data…",
) -> Text:
    """A braille chart ``width`` × ``height`` characters (legend, y ticks, x ticks included)."""
    x, y = x or Axis(), y or Axis()
    width, height = max(width, 20), max(height, 6)
    out = Text(no_wrap=True, overflow="crop")
    legend = Text(no_wrap=True)
    if title:
        legend.append(title + "  ", style="bold")
    for i, s in enumerate(series):
        legend.append("━ ", style=s.color or PALETTE[i % len(PALETTE)])
        legend.append(s.label + "  ")
    out.append(legend)
    out.append("\n")
    pts: list[
        tuple[float, float, float, float, str, bool]
    ] = []  # tx, ty, ty_lo, ty_hi, color, points
    lines: list[list[tuple[float, float]]] = []
    colors: list[str] = []
    for i, s in enumerate(series):
        c = s.color or PALETTE[i % len(PALETTE)]
        seg = []
        for j, (xv, yv) in enumerate(zip(s.x, s.y)):
            tx, ty = _tf(xv, x), _tf(yv, y)
            if tx is None or ty is None:
                continue
            lo = hi = ty
            if s.err is not None and j < len(s.err) and s.err[j] and math.isfinite(s.err[j]):
                lo = _tf(yv - s.err[j], y)
                hi = _tf(yv + s.err[j], y)
                lo = ty if lo is None else lo
                hi = ty if hi is None else hi
            seg.append((tx, ty))
            pts.append((tx, ty, lo, hi, c, s.points))
        lines.append(seg)
        colors.append(c)
    ylab_w = 8
    pw, ph = width - ylab_w - 1, height - 3  # plot cells; rows: legend, x axis, x labels
    if not pts:
        for r in range(ph):
            out.append(
                " " * ylab_w + "│" + (empty.center(pw) if r == ph // 2 else "") + "\n", style="dim"
            )
        out.append(" " * ylab_w + "└" + "─" * pw + "\n", style="dim")
        return out
    xs = [p[0] for p in pts]
    ys = [v for p in pts for v in (p[1], p[2], p[3])]
    x0, x1 = _range(xs, _tf(x.lo, x) if x.lo else None, _tf(x.hi, x) if x.hi else None)
    y0, y1 = _range(ys, None, None)
    cv = _Canvas(pw, ph)
    W, H = pw * 2 - 1, ph * 4 - 1

    def px(t: float) -> int:
        return round((t - x0) / (x1 - x0) * W)

    def py(t: float) -> int:
        return round((y1 - t) / (y1 - y0) * H)

    for seg, c in zip(lines, colors):
        for (ax_, ay), (bx, by) in zip(seg, seg[1:]):
            cv.line(px(ax_), py(ay), px(bx), py(by), c)
        if len(seg) == 1:
            cv.dot(px(seg[0][0]), py(seg[0][1]), c)
    marks: dict[tuple[int, int], str] = {}
    for tx, ty, lo, hi, c, mark in pts:
        if hi != lo:
            cv.line(px(tx), py(lo), px(tx), py(hi), c)
        if mark:
            marks[(px(tx) // 2, py(ty) // 4)] = c
    ytick_rows = {0: y1, ph - 1: y0, (ph - 1) // 2: (y0 + y1) / 2}
    for r in range(ph):
        lab = fmt_num(_inv(ytick_rows[r], y)) if r in ytick_rows else ""
        out.append(lab.rjust(ylab_w)[:ylab_w] + "┤" if lab else " " * ylab_w + "│", style="dim")
        for cx in range(pw):
            if (cx, r) in marks:
                out.append("●", style=Style(color=marks[(cx, r)], bold=True))
            elif cv.bits[r][cx]:
                out.append(chr(0x2800 + cv.bits[r][cx]), style=cv.color[r][cx] or None)
            else:
                out.append(" ")
        out.append("\n")
    # x axis with ticks
    ticks = list(x.ticks) if x.ticks else _auto_ticks(x0, x1, x)
    axis = ["─"] * pw
    labels = [" "] * (pw + 8)
    last_end = -2
    for tv in ticks:
        t = _tf(tv, x)
        if t is None or t < x0 - 1e-9 or t > x1 + 1e-9:
            continue
        col = min(px(t) // 2, pw - 1)
        axis[col] = "┬"
        lab = fmt_num(tv) if not x.log2 else str(int(round(tv))) if tv >= 1 else fmt_num(tv)
        start = max(0, min(col - len(lab) // 2, pw - len(lab)))
        if start <= last_end + 1:
            continue
        labels[start : start + len(lab)] = list(lab)
        last_end = start + len(lab)
    out.append(" " * ylab_w + "└" + "".join(axis) + "\n", style="dim")
    xl = "".join(labels).rstrip()
    if x.label:
        xl = xl.ljust(pw - len(x.label)) + " " + x.label if len(xl) + len(x.label) < pw else xl
    out.append(" " * (ylab_w + 1) + xl[:pw], style="dim")
    return out


def _auto_ticks(t0: float, t1: float, ax: Axis) -> list[float]:
    if ax.log2:
        return [2.0**k for k in range(math.ceil(t0 - 1e-9), math.floor(t1 + 1e-9) + 1)]
    if ax.log:
        return [10.0**k for k in range(math.ceil(t0 - 1e-9), math.floor(t1 + 1e-9) + 1)]
    return [t0 + (t1 - t0) * i / 4 for i in range(5)]


def _ramp(u: float) -> Color:
    """A perceptually ordered blue → green → yellow ramp (viridis-like), u in [0, 1]."""
    stops = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
    u = min(max(u, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(u), len(stops) - 2)
    f = u - i
    a, b = stops[i], stops[i + 1]
    return Color.from_rgb(*(round(a[k] + (b[k] - a[k]) * f) for k in range(3)))


def heatmap(
    grid: Sequence[Sequence[float]], width: int, height: int, *, log: bool = False, title: str = ""
) -> Text:
    """A 2-D surface as half blocks (two grid rows per text row), nearest-neighbour scaled.

    ``grid[i][j]``: value at row i (β, top = last) and column j (α). Non-finite cells are blank.
    """
    out = Text(no_wrap=True, overflow="crop")
    vals = [
        v for row in grid for v in row if v is not None and math.isfinite(v) and (not log or v > 0)
    ]
    if title:
        out.append(title + "\n", style="bold")
        height -= 1
    if not vals or not grid:
        out.append("no surface yet", style="dim")
        return out
    tr = (lambda v: math.log10(v)) if log else (lambda v: v)
    lo, hi = tr(min(vals)), tr(max(vals))
    span = (hi - lo) or 1.0
    nr, nc = len(grid), max(len(r) for r in grid)
    cols = max(4, min(width - 2, nc * 2 if nc * 2 <= width - 2 else width - 2))
    rows = max(2, min(height - 1, (nr + 1) // 2 if nr <= 2 * (height - 1) else height - 1))

    def at(i: int, j: int) -> Color | None:
        gi = nr - 1 - min(nr - 1, i * nr // (2 * rows))
        gj = min(nc - 1, j * nc // cols)
        row = grid[gi]
        v = row[gj] if gj < len(row) else None
        if v is None or not math.isfinite(v) or (log and v <= 0):
            return None
        return _ramp((tr(v) - lo) / span)

    for r in range(rows):
        for j in range(cols):
            top, bot = at(2 * r, j), at(2 * r + 1, j)
            out.append("▀", style=Style(color=top, bgcolor=bot))
        out.append("\n")
    out.append(f"{fmt_num(min(vals))} ", style="dim")
    for k in range(10):
        out.append("█", style=Style(color=_ramp(k / 9)))
    out.append(f" {fmt_num(max(vals))}" + (" (log)" if log else ""), style="dim")
    return out
