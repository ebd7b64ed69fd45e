"""TrainingPanel: live loss and accuracy of the running cell, and the events/log pane."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import RichLog, Static

from malleability_tui.plots import Axis, Series
from malleability_tui.state import RunState
from malleability_tui.views.training import cell_label, metric_series
from malleability_tui.widgets.focus_style import RestyleSelfOnFocus
from malleability_tui.widgets.plot_view import Figure, PlotView

LEVEL_STYLE = {"warning": "yellow", "error": "bold red", "info": ""}


class TrainingPanel(RestyleSelfOnFocus, Vertical):
    """Curves on top, the log below; the log only appends what is new."""

    DEFAULT_CSS = """
    TrainingPanel #train-title { height: 1; color: $text-muted; }
    TrainingPanel #train-plots { height: 3fr; }
    TrainingPanel #loss-plot, TrainingPanel #acc-plot { width: 1fr; }
    TrainingPanel #log { height: 2fr; min-height: 3; border-top: solid $panel-lighten-2; }
    """

    can_focus = True

    state: reactive[RunState] = reactive(RunState, always_update=True)

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._logged = 0
        self._log_owner: int | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="train-title")
        with Horizontal(id="train-plots"):
            yield PlotView(id="loss-plot")
            yield PlotView(id="acc-plot")
        yield RichLog(id="log", wrap=True, markup=False, max_lines=2000)

    def watch_state(self, st: RunState) -> None:
        if not self.is_mounted:
            return
        cell = st.live_cell()
        m = st.metrics.get(cell, {})
        ex, loss = metric_series(m, "train_loss")
        ax, acc = metric_series(m, "train_accuracy")
        if not ex:
            # A reopened run without live metrics: the last training curve artifact.
            items = st.artifacts.get("train_curve") or []
            if items:
                cell, art = items[-1]
                ex = ax = [float(e) for e in art.get("epoch", [])]
                loss, acc = list(art.get("loss", [])), list(art.get("accuracy", []))
        title = f"cell: {cell_label(cell)}" if cell else "no cell trained yet"
        done = st.progress.get("cell")
        if done and st.progress_cell == cell and cell.startswith("train/"):
            title += f"  epoch {done[0]}/{done[1]} of this cell"
        # One line of fixed height: no layout pass (that reflowed the screen every tick).
        self.query_one("#train-title", Static).update(title, layout=False)
        self.query_one("#loss-plot", PlotView).figure = Figure(
            (Series("loss", ex, loss, color="cyan"),) if ex else (),
            x=Axis(label="epoch", integer=True),
            y=Axis(log=True, label="loss"),
            title="train loss",
            empty="waiting for a training cell…",
        )
        self.query_one("#acc-plot", PlotView).figure = Figure(
            (Series("accuracy", ax, acc, color="green"),) if ax else (),
            x=Axis(label="epoch", integer=True),
            y=Axis(label="accuracy"),
            title="train accuracy",
            empty="waiting for a training cell…",
        )
        log = self.query_one("#log", RichLog)
        if self._log_owner != id(st) or self._logged > len(st.logs):
            log.clear()
            self._logged = 0
            self._log_owner = id(st)
        for level, msg in st.logs[self._logged :]:
            log.write(Text(f"[{level}] {msg}", style=LEVEL_STYLE.get(level, "")))
        self._logged = len(st.logs)
