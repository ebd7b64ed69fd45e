"""SweepPanel: NTK distance vs width (log₂ axis, both models, ±std over seeds) and live drift."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Static

from malleability_tui.format import cell_label, fmt, metric_series, sweep_series
from malleability_tui.plots import Axis, Series
from malleability_tui.state import RunState
from malleability_tui.widgets.plot_view import Figure, PlotView

COLUMNS = (
    "ntk_distance",
    "ntk_distance_rel",
    "kernel_distance_final",
    "kernel_drift",
    "test_accuracy",
)
COLORS = {"2L-ReLU": "cyan", "MLP-Attn": "magenta", "QKV-Attn": "yellow"}


class SweepPanel(Vertical):
    """Top: the sweep curve per model; bottom: ‖Θ_t − Θ_0‖/‖Θ_0‖ of the cell training now."""

    DEFAULT_CSS = """
    SweepPanel #sweep-plot { height: 3fr; }
    SweepPanel #drift-plot { height: 2fr; }
    SweepPanel #sweep-note { height: auto; color: $text-muted; }
    """
    BINDINGS = [Binding("m", "next_metric", "Metric")]

    can_focus = True

    state: reactive[RunState] = reactive(RunState, always_update=True)
    column: reactive[str] = reactive("ntk_distance")

    def compose(self) -> ComposeResult:
        yield PlotView(id="sweep-plot")
        yield Static("", id="sweep-note")
        yield PlotView(id="drift-plot")

    def action_next_metric(self) -> None:
        self.column = COLUMNS[(COLUMNS.index(self.column) + 1) % len(COLUMNS)]

    def watch_column(self) -> None:
        self.watch_state(self.state)

    def watch_state(self, st: RunState) -> None:
        if not self.is_mounted:
            return
        rows = st.tables.get("ntk_distance", [])
        column, source = self.column, "ntk_distance"
        if not rows and st.tables.get("train"):
            # No NTK experiment in this run: show what training measured.
            rows, column, source = st.tables["train"], "test_accuracy", "train"
        data = sweep_series(rows, column)
        series = []
        for model, (ws, mean, std, _n) in data.items():
            series.append(Series(model, ws, mean, std, color=COLORS.get(model, ""), points=True))
        widths = sorted({w for ws, *_ in data.values() for w in ws})
        self.query_one("#sweep-plot", PlotView).figure = Figure(
            tuple(series),
            x=Axis(log2=True, ticks=widths or None, label="width m"),
            y=Axis(),
            title=f"{column} vs width (mean ± std over seeds)",
            empty="no sweep rows yet: run an experiment such as ntk or train",
        )
        note = []
        for model, (ws, mean, std, n) in data.items():
            if ws:
                note.append(
                    f"{model}: m={ws[-1]} {fmt(mean[-1])} ± {fmt(std[-1], 2)} ({n[-1]} seeds)"
                )
        src = f"[{source}.csv, m: next metric] " if source != "train" else "[train.csv] "
        self.query_one("#sweep-note", Static).update(src + "   ".join(note))
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
            x=Axis(label="epoch"),
            title="kernel drift ‖Θt−Θ0‖/‖Θ0‖",
            empty="no kernel drift yet (ntk.drift_every > 0 records it while training)",
        )
