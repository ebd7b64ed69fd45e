"""SweepPanel: the distance to the linearization (or the NTK distance) vs width (log₂ axis, both models, ±std over seeds) and live drift."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Static

from malleability_tui.format import MODEL_COLORS, model_color
from malleability_tui.plots import Axis, Series
from malleability_tui.state import RunState
from malleability_tui.text import mean_pm
from malleability_tui.text import number as fmt
from malleability_tui.views.guards import guard_notes
from malleability_tui.views.sweep import next_column, sweep_column, sweep_series
from malleability_tui.views.training import cell_label, metric_series
from malleability_tui.widgets.focus_style import RestyleSelfOnFocus
from malleability_tui.widgets.plot_view import Figure, PlotView

COLORS = MODEL_COLORS  # the legend colours per model (one table, in format.py)


def paper_line(data: dict, dataset: str) -> str:
    """Ours beside the paper's Table 1 at its widths (16, 1024, 4096), where it has the data set."""
    from engine.ntk.paper import paper_ntk_distances

    parts = []
    for model, (ws, mean, _std, _n) in data.items():
        paper = paper_ntk_distances(model, dataset)
        if not paper:
            continue
        cells = []
        for w, pv in sorted(paper.items()):
            ours = fmt(mean[ws.index(w)]) if w in ws else "not run"
            cells.append(f"m={w} {ours} (paper {pv:g})")
        parts.append(f"{model}: " + ", ".join(cells))
    return ("Table 1 · " + " · ".join(parts)) if parts else ""


class SweepPanel(RestyleSelfOnFocus, Vertical):
    """Top: the sweep curve per model; bottom: ‖Θ_t − Θ_0‖/‖Θ_0‖ of the cell training now."""

    DEFAULT_CSS = """
    SweepPanel #sweep-plot { height: 3fr; }
    SweepPanel #drift-plot { height: 2fr; }
    SweepPanel #sweep-note { height: auto; color: $text-muted; }
    """
    BINDINGS = [Binding("m", "next_metric", "Metric")]

    can_focus = True

    state: reactive[RunState] = reactive(RunState, always_update=True)
    column: reactive[str] = reactive("")
    """The column chosen with ``m``; "" lets ``sweep_column`` lead with lin_distance_rel."""

    def compose(self) -> ComposeResult:
        yield PlotView(id="sweep-plot")
        yield Static("", id="sweep-note")
        yield PlotView(id="drift-plot")

    def action_next_metric(self) -> None:
        rows = self.state.tables.get("ntk_distance", [])
        self.column = next_column(sweep_column(rows, self.column))

    def watch_column(self) -> None:
        self.watch_state(self.state)

    def watch_state(self, st: RunState) -> None:
        if not self.is_mounted:
            return
        rows = st.tables.get("ntk_distance", [])
        column, source = sweep_column(rows, self.column), "ntk_distance"
        if not rows and st.tables.get("train"):
            # No NTK experiment in this run: show what training measured.
            rows, column, source = st.tables["train"], "test_accuracy", "train"
        data = sweep_series(rows, column, source)
        models = list(data)
        series = []
        for model, (ws, mean, std, _n) in data.items():
            series.append(
                Series(model, ws, mean, std, color=model_color(model, models), points=True)
            )
        widths = sorted({w for ws, *_ in data.values() for w in ws})
        self.query_one("#sweep-plot", PlotView).figure = Figure(
            tuple(series),
            x=Axis(log2=True, ticks=widths or None, label="width m"),
            y=Axis(label=column),
            title=f"{column} vs width (mean ± std over seeds)",
            empty="no sweep rows yet: run an experiment such as ntk or train",
        )
        note = []
        for model, (ws, mean, std, n) in data.items():
            if ws:
                note.append(f"{model}: m={ws[-1]} {mean_pm(mean[-1], std[-1], n[-1])}")
        src = f"[{source}.csv, m: next metric] " if source != "train" else "[train.csv] "
        # one line when it fits, else a model's note a line (never one cut from its value)
        width = self.size.width or self.app.size.width  # not laid out yet: the screen
        first = src + "   ".join(note)
        lines = [escape(first)] if len(first) <= width else [escape(src + n) for n in note[:1]]
        if len(first) > width:
            lines += [escape(n) for n in note[1:]]
        dataset = str((st.spec.get("data") or {}).get("name", ""))
        if column == "ntk_distance" and not (st.spec.get("data") or {}).get("classes"):
            ref = paper_line(data, dataset)
            if ref:
                lines.append(ref)
        lines += guard_notes(st.tables.get("ntk_distance") or st.tables.get("train", []))
        self.query_one("#sweep-note", Static).update("\n".join(lines))
        cell = st.live_cell()
        xs, ys = metric_series(st.metrics.get(cell, {}), "kernel_drift")
        label = cell_label(cell) if cell else ""
        if not xs:
            art = st.artifact("drift")
            if isinstance(art, dict) and art.get("epochs"):
                xs, ys = list(art["epochs"]), list(art["drift"])
                label = cell_label(st.artifacts["drift"][-1][0])
        self.query_one("#drift-plot", PlotView).figure = Figure(
            (Series(label or "drift", xs, ys, color="yellow"),) if xs else (),
            x=Axis(label="epoch", integer=True),
            y=Axis(label="drift"),
            title="kernel drift ‖Θt−Θ0‖/‖Θ0‖",
            empty="no kernel drift yet (ntk.drift_every > 0 records it while training)",
        )
