"""PlotView: a chart that redraws itself to fit its size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from malleability_tui.plots import Axis, Series, heatmap, line_chart


@dataclass(frozen=True)
class Figure:
    """What to draw: a line chart (``series``) or a heatmap (``grid``)."""

    series: tuple[Series, ...] = ()
    x: Axis = field(default_factory=Axis)
    y: Axis = field(default_factory=Axis)
    title: str = ""
    grid: Sequence[Sequence[float]] | None = None
    log: bool = False
    empty: str = "waiting for data…"


class PlotView(Widget):
    """Renders ``figure`` at the widget's current size (braille lines or half blocks)."""

    DEFAULT_CSS = """
    PlotView { height: 1fr; min-height: 6; }
    """

    figure: reactive[Figure] = reactive(Figure, always_update=True)

    def render(self) -> Text:
        f = self.figure
        w, h = self.size.width, self.size.height
        if f.grid is not None:
            return heatmap(f.grid, w, h, log=f.log, title=f.title)
        return line_chart(f.series, w, h, x=f.x, y=f.y, title=f.title, empty=f.empty)
