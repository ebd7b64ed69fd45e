"""PlotView: a plotext chart that redraws itself to fit its size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from malleability_tui.plots import Axis, Series, bar_chart, heatmap, line_chart


@dataclass(frozen=True)
class Figure:
    """What to draw: a line chart (``series``), a heatmap (``grid``) or bars (``bars``)."""

    series: tuple[Series, ...] = ()
    x: Axis = field(default_factory=Axis)
    y: Axis = field(default_factory=Axis)
    title: str = ""
    grid: Sequence[Sequence[float]] | None = None
    """Heatmap cells grid[i][j]; ``x.ticks``/``y.ticks`` give the column / row values."""
    log: bool = False
    """Heatmap colours on a log scale."""
    value_label: str = "loss"
    """What the heatmap's colours stand for (its colour legend)."""
    bars: tuple[str, ...] = ()
    """Bar-chart categories; ``bar_groups`` holds (label, values, colour) per group."""
    bar_groups: tuple[tuple[str, tuple[float, ...], str], ...] = ()
    empty: str = "waiting for data…"


def render_figure(f: Figure, w: int, h: int) -> Text:
    """The figure as text for a ``w``×``h`` box (pure; used by the widget and tests)."""
    if f.grid is not None:
        return heatmap(
            f.grid,
            w,
            h,
            log=f.log,
            title=f.title,
            xs=f.x.ticks,
            ys=f.y.ticks,
            x_label=f.x.label or "α",
            y_label=f.y.label or "β",
            value_label=f.value_label,
        )
    if f.bars:
        return bar_chart(f.bars, f.bar_groups, w, h, y=f.y, title=f.title, empty=f.empty)
    return line_chart(f.series, w, h, x=f.x, y=f.y, title=f.title, empty=f.empty)


class PlotView(Widget):
    """Renders ``figure`` at the widget's current size; rebuilt only when either changes."""

    DEFAULT_CSS = """
    PlotView { height: 1fr; min-height: 6; }
    """

    figure: reactive[Figure] = reactive(Figure)

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._cache: tuple[Figure, int, int, Text] | None = None

    def render(self) -> Text:
        f = self.figure
        w, h = self.size.width, self.size.height
        c = self._cache
        if c is not None and c[0] is f and c[1] == w and c[2] == h:
            return c[3]  # a repaint (tab switch, focus) must not rebuild the chart
        text = render_figure(f, w, h)
        self._cache = (f, w, h, text)
        return text
