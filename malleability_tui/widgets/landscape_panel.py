"""LandscapePanel: 1-D loss curves of both models, a 2-D heatmap, sharpness numbers."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Static

from malleability_tui.format import model_color
from malleability_tui.plots import Axis, Series
from malleability_tui.state import RunState
from malleability_tui.views.guards import guard_notes
from malleability_tui.views.landscape import (
    landscape_axes,
    landscape_curves,
    landscape_surfaces,
    sharpness_rows,
)
from malleability_tui.widgets.focus_style import RestyleSelfOnFocus
from malleability_tui.widgets.plot_view import Figure, PlotView


class LandscapePanel(RestyleSelfOnFocus, Vertical):
    """``t`` cycles the model whose 2-D surface is shown."""

    DEFAULT_CSS = """
    LandscapePanel #land-top { height: 1fr; }
    LandscapePanel #curve-plot { width: 1fr; }
    LandscapePanel #surface-plot { width: 1fr; }
    LandscapePanel #sharpness { height: auto; max-height: 8; }
    """
    BINDINGS = [Binding("t", "next_surface", "Surface")]

    can_focus = True

    state: reactive[RunState] = reactive(RunState, always_update=True)
    surface_index: reactive[int] = reactive(0)

    def compose(self) -> ComposeResult:
        with Horizontal(id="land-top"):
            yield PlotView(id="curve-plot")
            yield PlotView(id="surface-plot")
        yield Static("", id="sharpness")

    def action_next_surface(self) -> None:
        self.surface_index += 1

    def watch_surface_index(self) -> None:
        self.watch_state(self.state)

    def watch_state(self, st: RunState) -> None:
        if not self.is_mounted:
            return
        rows = st.tables.get("landscape", [])
        curves = landscape_curves(rows)
        models = [k.split(" ")[0] for k in curves]
        series = tuple(
            Series(k, a, loss, color=model_color(k.split(" ")[0], models))
            for k, (a, loss) in curves.items()
        )
        self.query_one("#curve-plot", PlotView).figure = Figure(
            series,
            x=Axis(label="α (step along the direction)"),
            y=Axis(log=True, label="loss"),
            title="1-D loss",
            empty="no landscape yet: run the landscape experiment",
        )
        surfaces = landscape_surfaces(rows)
        if surfaces:
            names = list(surfaces)
            name = names[self.surface_index % len(names)]
            alphas, betas = landscape_axes(rows, name)
            fig = Figure(
                grid=surfaces[name],
                x=Axis(ticks=alphas, label="α"),
                y=Axis(ticks=betas, label="β"),
                log=True,
                title=f"2-D loss {name} (t: next)",
            )
        else:
            fig = Figure(grid=[], title="2-D loss")
        self.query_one("#surface-plot", PlotView).figure = fig
        sharp = sharpness_rows(st.tables.get("sharpness", []))
        if sharp:
            lines = [f"{'model':<10} {'seeds':>5}  {'top Hessian eig':<22} Hessian trace"]
            lines += [f"{m:<10} {n:>5}  {e:<22} {t}" for m, n, e, t in sharp]
            lines += guard_notes(st.tables.get("sharpness", []))
        else:
            lines = ["[dim]sharpness (top Hessian eigenvalue, trace) appears here[/dim]"]
        self.query_one("#sharpness", Static).update("\n".join(lines))
