"""Terminal plots drawn by plotext: line charts with error bars, heatmaps, bar charts.

Pure functions returning ``rich.text.Text`` (plotext builds the figure as ANSI text,
``Text.from_ansi`` reads it back), so they are deterministic (snapshot tests), fast
(a few ms a figure) and unit-testable without an app. Each call owns its own plotext
terminal and figure, so plots may be built off the UI thread.

What this module decides itself, because plotext's automatic rulers cannot:

* tick positions and labels (``ticks_for``): integer ticks on integer axes, one tick
  per decade (or per 2, 5, 10 decades) on log axes, linear ticks with as many digits
  as the step needs. Log axes are drawn by transforming the values and labelling the
  ticks with the original ones, so error bars and ticks follow the same rule.
* the legend: plotext's is a boxed overlay inside the canvas that hides data at
  80×24, so one coloured line above the canvas lists the series instead.
* the heatmap's colour legend: plotext has no colour bar, so one line below the
  canvas shows the colour ramp (plotext's own colormap) with its low and high values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from plotext import marker as pt_marker
from plotext._correct.heatmap import colormap
from plotext._kernel.terminal import terminal
from rich.text import Text

PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "red")


@dataclass
class Series:
    """One line of a chart: points (x, y), optional symmetric error bars."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    err: Sequence[float] | None = None
    color: str = ""
    points: bool = False
    """Also mark each point (sparse data such as widths)."""


@dataclass
class Axis:
    log: bool = False
    """Plot log10 of the values (non-positive values are dropped); ticks per decade."""
    log2: bool = False
    """Plot log2 of the values (width sweeps); ticks show the values themselves."""
    ticks: Sequence[float] | None = None
    """Tick positions (original units); thinned to fit. None: chosen automatically."""
    label: str = ""
    """Axis title (always drawn)."""
    lo: float | None = None
    hi: float | None = None
    integer: bool = False
    """Integer quantity (epochs, indices): ticks only at integers."""


# -- ticks ------------------------------------------------------------------------------------


def fmt_num(v: float) -> str:
    """A short tick label: ``1e-03``-style only for very large/small magnitudes."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        m, e = f"{v:.0e}".split("e")
        return f"{m}e{int(e)}"
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.3g}"


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0


def _nice_step(span: float, n: int, integer: bool) -> float:
    raw = span / max(n - 1, 1)
    if raw <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        step = m * mag
        if step >= raw and not (integer and not float(step).is_integer()):
            break
    if integer:
        step = max(1.0, math.ceil(step))
    return step


def _tf(v: float, ax: Axis) -> float | None:
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    if ax.log or ax.log2:
        if v <= 0:
            return None
        return math.log2(v) if ax.log2 else math.log10(v)
    return float(v)


def ticks_for(t0: float, t1: float, ax: Axis, n: int) -> tuple[list[float], list[str]]:
    """Tick positions (in plotted, i.e. transformed, units) and labels for [t0, t1].

    ``n`` is how many labels fit. Log axes: one tick per decade, or per 2/5/10 decades
    when more would not fit. Integer axes: integer ticks only. Linear axes: a 1-2-2.5-5
    step with as many decimals as the step needs (no "2.3 / 2.3 / 2.3").
    """
    n = max(n, 2)
    if ax.ticks is not None:
        pos = [p for p in (_tf(v, ax) for v in ax.ticks) if p is not None]
        labs = [fmt_num(v) for v in ax.ticks if _tf(v, ax) is not None]
        if len(pos) > n:
            keep = sorted({round(i * (len(pos) - 1) / (n - 1)) for i in range(n)})
            pos, labs = [pos[i] for i in keep], [labs[i] for i in keep]
        return pos, labs
    if ax.log:
        e0, e1 = math.floor(t0 + 1e-9), math.ceil(t1 - 1e-9)
        decades = max(e1 - e0, 1)
        every = next((s for s in (1, 2, 5, 10, 20, 50) if decades / s + 1 <= n), 100)
        start = math.ceil(e0 / every) * every
        pos = [float(e) for e in range(start, e1 + 1, every) if t0 - 1e-9 <= e <= t1 + 1e-9]
        if len(pos) < 2:
            # Less than a decade on show: linear ticks in the values, placed on the log axis.
            lin_pos, lin_labs = ticks_for(10.0**t0, 10.0**t1, Axis(), n)
            on_log = [(math.log10(p), lab) for p, lab in zip(lin_pos, lin_labs) if p > 0]
            if len(on_log) >= 2:
                return [p for p, _ in on_log], [lab for _, lab in on_log]
        if not pos:
            pos = [float(round((t0 + t1) / 2))]
        return pos, [fmt_num(10.0**e) if -3 <= e <= 4 else f"1e{int(e)}" for e in pos]
    if ax.log2:
        pos = [float(e) for e in range(math.ceil(t0), math.floor(t1) + 1)]
        if len(pos) > n:
            every = math.ceil(len(pos) / n)
            pos = pos[::every]
        return pos, [fmt_num(2.0**e) for e in pos]
    integer = ax.integer
    step = _nice_step(t1 - t0, n, integer)
    pos = []
    v = math.ceil(t0 / step - 1e-9) * step
    while v <= t1 + step * 1e-9 and len(pos) < 50:
        pos.append(0.0 if abs(v) < step * 1e-9 else v)
        v += step
    dec = 0 if integer else _decimals(step)
    labs = [fmt_num(p) if abs(p) >= 1e5 or (p and abs(p) < 1e-3) else f"{p:.{dec}f}" for p in pos]
    return pos, labs


def _range(vals: list[float], lo: float | None, hi: float | None) -> tuple[float, float]:
    a = lo if lo is not None else min(vals)
    b = hi if hi is not None else max(vals)
    if a == b:
        pad = abs(a) * 0.05 or 0.5
        a, b = a - pad, b + pad
    return a, b


# -- figures ------------------------------------------------------------------------------------


def _figure(w: int, h: int):  # noqa: ANN202 - plotext has no public type for it
    term = terminal()
    term.limit(False, False)  # size from the widget, not from the process's terminal
    fig = term._master
    fig.plot_size(max(w, 10), max(h, 4))
    fig.theme("simple")  # no background colours: the app's theme shows through
    fig.legend(active=False)
    return fig


def _built(fig) -> Text:  # noqa: ANN001
    return Text.from_ansi(fig.build().string().rstrip("\n"), no_wrap=True)


def _legend(title: str, items: list[tuple[str, str]], w: int, most: int = 3) -> Text:
    """The title and a ``● name`` per series, each whole: a name that does not fit the
    line starts the next one (up to ``most`` lines; then, and only then, the last is cut
    with …). ``_lines(out)`` is the number of lines taken from the chart."""
    lines = [Text(no_wrap=True, overflow="ellipsis")]
    if title:
        lines[0].append(title, style="bold")
    for label, color in items:
        piece = 4 + len(label)
        line = lines[-1]
        if line.cell_len and line.cell_len + piece >= w and len(lines) < most:
            lines.append(line := Text(no_wrap=True, overflow="ellipsis"))
        line.append("  ● " if line.cell_len else "● ", style=color or "default")
        line.append(label)
    for line in lines:
        line.truncate(w, overflow="ellipsis")
    return Text("\n", no_wrap=True).join(lines)


def _lines(t: Text) -> int:
    return t.plain.count("\n") + 1


def _empty(title: str, message: str, w: int, h: int, x: Axis, y: Axis) -> Text:
    t = Text(no_wrap=True)
    t.append((title or "") + "\n", style="bold")
    t.append(message + "\n", style="dim")
    axes = " · ".join(
        a for a in (f"x: {x.label}" if x.label else "", f"y: {y.label}" if y.label else "") if a
    )
    if axes:
        t.append(axes, style="dim")
    return t


def line_chart(
    series: Sequence[Series],
    w: int,
    h: int,
    *,
    x: Axis | None = None,
    y: Axis | None = None,
    title: str = "",
    empty: str = "waiting for data…",
) -> Text:
    """Lines (with error bars and point marks where asked) in a ``w``×``h`` cell box.

    Line 1: title and legend; then plotext's canvas with both rulers and axis titles.
    """
    x, y = x or Axis(), y or Axis()
    pts: list[tuple[Series, list[tuple[float, float, float | None]]]] = []
    for s in series:
        p = []
        for i, (xv, yv) in enumerate(zip(s.x, s.y)):
            tx, ty = _tf(xv, x), _tf(yv, y)
            if tx is None or ty is None:
                continue
            e = s.err[i] if s.err is not None and i < len(s.err) else None
            p.append((tx, ty, e if e is not None and math.isfinite(e) and not y.log else None))
        if p:
            pts.append((s, p))
    if not pts or w < 12 or h < 5:
        return _empty(title, empty, w, h, x, y)
    xs = [a for _, p in pts for a, _, _ in p]
    ys = [b for _, p in pts for _, b, _ in p] + [
        b + s * e for _, p in pts for _, b, e in p if e is not None for s in (-1, 1)
    ]
    x0, x1 = _range(
        xs, _tf(x.lo, x) if x.lo is not None else None, _tf(x.hi, x) if x.hi is not None else None
    )
    y0, y1 = _range(
        ys, _tf(y.lo, y) if y.lo is not None else None, _tf(y.hi, y) if y.hi is not None else None
    )
    items = [(s.label, s.color or PALETTE[i % len(PALETTE)]) for i, (s, _) in enumerate(pts)]
    out = _legend(title, items if len(items) > 1 or items[0][0] else [], w)
    fig = _figure(w, h - _lines(out))
    for i, (s, p) in enumerate(pts):
        color = s.color or PALETTE[i % len(PALETTE)]
        sig = fig.signal(
            [a for a, _, _ in p], [b for _, b, _ in p], marker=pt_marker("braille", pixel=color)
        )
        sig.lines()
        fig.draw(sig)
        errs = [(a, b, e) for a, b, e in p if e is not None and e > 0]
        if errs:
            fig.draw(
                fig.error(
                    [a for a, _, _ in errs],
                    [b for _, b, _ in errs],
                    [e for _, _, e in errs],
                    pixel=color,
                )
            )
        if s.points:
            fig.draw(
                fig.signal(
                    [a for a, _, _ in p], [b for _, b, _ in p], marker=pt_marker("●", pixel=color)
                )
            )
    ylabels_w = 8
    xt, xl = ticks_for(x0, x1, x, max(2, (w - ylabels_w) // 8))
    yt, yl = ticks_for(y0, y1, y, max(2, (h - 4) // 2))
    x0, x1 = min([x0, *xt]), max([x1, *xt])
    y0, y1 = min([y0, *yt]), max([y1, *yt])
    fig.ruler("x").lim(x0, x1)
    fig.ruler("x").ticks(xt, xl)
    fig.ruler("y").lim(y0, y1)
    fig.ruler("y").ticks(yt, yl)
    fig.label(x.label or " ", "x")
    fig.label(y.label or " ", "y")
    out.append("\n")
    out.append_text(_built(fig))
    return out


def heatmap(
    grid: Sequence[Sequence[float]],
    w: int,
    h: int,
    *,
    log: bool = False,
    title: str = "",
    xs: Sequence[float] | None = None,
    ys: Sequence[float] | None = None,
    x_label: str = "α",
    y_label: str = "β",
    value_label: str = "loss",
) -> Text:
    """``grid[i][j]`` (row i ↔ ``ys[i]``, column j ↔ ``xs[j]``) as coloured cells that fill
    ``w``×``h``, ``ys`` growing upwards, labelled axes and a colour legend (last line)."""
    rows = [list(r) for r in grid if len(r)]
    if not rows or w < 12 or h < 6:
        return _empty(
            title,
            "no surface yet: run the landscape experiment",
            w,
            h,
            Axis(label=x_label),
            Axis(label=y_label),
        )
    vals = [[(math.log10(v) if v > 0 else math.nan) if log else v for v in r] for r in rows]
    finite = [v for r in vals for v in r if math.isfinite(v)]
    if not finite:
        return _empty(
            title,
            "the surface holds no finite value",
            w,
            h,
            Axis(label=x_label),
            Axis(label=y_label),
        )
    lo, hi = min(finite), max(finite)
    vals = [[v if math.isfinite(v) else lo for v in r] for r in vals]
    nx, ny = len(vals[0]), len(vals)
    xs = list(xs) if xs is not None and len(xs) == nx else list(range(nx))
    ys = list(ys) if ys is not None and len(ys) == ny else list(range(ny))
    fig = _figure(w, h - 2)
    # plotext draws the grid's first row at the top; ours grows upwards.
    fig.draw(fig.heatmap(vals[::-1], map="viridis", fill=True))

    def axis_ticks(values: list[float], n: int) -> tuple[list[float], list[str]]:
        k = min(len(values), max(2, n))
        idx = sorted({round(i * (len(values) - 1) / max(k - 1, 1)) for i in range(k)})
        return [float(i) for i in idx], [f"{values[i]:.2g}" for i in idx]

    xt, xl = axis_ticks(xs, max(2, (w - 8) // 7))
    yt, yl = axis_ticks(ys, max(2, (h - 5) // 2))
    fig.ruler("x").ticks(xt, xl)
    fig.ruler("y").ticks(yt, yl)
    fig.label(x_label, "x")
    fig.label(y_label, "y")
    out = _legend(title, [], w)
    out.append("\n")
    out.append_text(_built(fig))
    out.append("\n")
    out.append_text(colour_legend(lo, hi, w, log=log, label=value_label))
    return out


def colour_legend(lo: float, hi: float, w: int, *, log: bool = False, label: str = "") -> Text:
    """``label  lo ▇▇▇…▇ hi`` with plotext's viridis ramp (values in original units)."""

    def show(v: float) -> str:
        return fmt_num(10**v) if log else fmt_num(v)

    head = f"{label}{' (log)' if log else ''}  {show(lo)} "
    tail = f" {show(hi)}"
    n = max(4, min(40, w - len(head) - len(tail)))
    ramp = colormap([[i / (n - 1) for i in range(n)]], "viridis")[0]
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(head, style="dim")
    for r, g, b in ramp:
        t.append("█", style=f"rgb({r},{g},{b})")
    t.append(tail, style="dim")
    return t


def bar_chart(
    categories: Sequence[str],
    groups: Sequence[tuple[str, Sequence[float], str]],
    w: int,
    h: int,
    *,
    y: Axis | None = None,
    title: str = "",
    empty: str = "no data yet",
) -> Text:
    """Grouped bars: one group per category, one bar per ``(label, values, colour)``."""
    y = y or Axis()
    if not categories or not groups or w < 12 or h < 5:
        return _empty(title, empty, w, h, Axis(), y)
    heights = [[v if math.isfinite(v) else 0.0 for v in vals] for _, vals, _ in groups]
    out = _legend(
        title, [(lab, c or PALETTE[i % len(PALETTE)]) for i, (lab, _, c) in enumerate(groups)], w
    )
    fig = _figure(w, h - _lines(out))
    fig.draw(
        fig.bar(
            list(categories),
            heights,
            marker=[
                pt_marker("█", pixel=c or PALETTE[i % len(PALETTE)])
                for i, (_, _, c) in enumerate(groups)
            ],
        )
    )
    top = max([v for r in heights for v in r] + [y.hi or 0.0, 1e-9])
    yt, yl = ticks_for(0.0, top, Axis(integer=y.integer), max(2, (h - 4) // 2))
    fig.ruler("y").lim(0.0, max(top, yt[-1]))
    fig.ruler("y").ticks(yt, yl)
    fig.label(" ", "x")
    fig.label(y.label or " ", "y")
    out.append("\n")
    out.append_text(_built(fig))
    return out
