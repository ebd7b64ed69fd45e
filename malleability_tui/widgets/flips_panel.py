"""FlipsPanel: flip rate [95% CI] per data set × model × attack × ε × training, with the paper's."""

from __future__ import annotations

import math

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from malleability_tui.format import FLIP_HEADERS, FlipRow, flip_rows, model_color
from malleability_tui.plots import Axis
from malleability_tui.state import RunState
from malleability_tui.widgets.plot_view import Figure, PlotView


def adversarial_lines(rows: list[FlipRow]) -> list[str]:
    """``PGD ε=0.3 2L-ReLU: 3.3% → 43.4% (paper 3.3% → 43.4%)`` for each standard/adversarial pair."""
    std = {(r.dataset, r.model, r.attack, r.eps): r for r in rows if r.training == "standard"}
    out = []
    for r in rows:
        if r.training == "standard":
            continue
        s = std.get((r.dataset, r.model, r.attack, r.eps))
        if s is None or not math.isfinite(r.flip):
            continue
        line = f"{r.dataset} {r.attack.upper()} ε={r.eps:g} {r.model}: {100 * s.flip:.1f}% → {100 * r.flip:.1f}%"
        if s.paper is not None and r.paper is not None:
            line += f"  (paper {s.paper:.1f}% → {r.paper:.1f}%)"
        out.append(line)
    return out


def flip_bars(rows: list[FlipRow]) -> Figure:
    """Bars of the standard-training flip rate (%) per attack, one bar per model present,
    for the first data set and the largest ε (the paper's tables use ε = 0.3)."""
    std = [r for r in rows if r.training == "standard" and math.isfinite(r.flip)]
    if not std:
        return Figure(empty="no flip rates yet", title="flip rate %")
    ds = std[0].dataset
    eps = max(r.eps for r in std if r.dataset == ds)
    sel = [r for r in std if r.dataset == ds and r.eps == eps]
    attacks = list(dict.fromkeys(r.attack for r in sel))
    models = list(dict.fromkeys(r.model for r in sel))
    by = {(r.model, r.attack): 100 * r.flip for r in sel}
    groups = tuple(
        (m, tuple(by.get((m, a), math.nan) for a in attacks), model_color(m, models))
        for m in models
    )
    return Figure(
        bars=tuple(a.upper() for a in attacks),
        bar_groups=groups,
        y=Axis(label="flip %"),
        title=f"flip rate, {ds} ε={eps:g}",
    )


class FlipsPanel(Vertical):
    """The flip-rate table, a bar chart of it and the standard → adversarial comparison."""

    DEFAULT_CSS = """
    FlipsPanel DataTable { height: auto; max-height: 1fr; }
    FlipsPanel #flip-bars { height: 1fr; min-height: 8; }
    FlipsPanel #flip-notes { height: auto; max-height: 6; color: $text-muted; }
    """

    state: reactive[RunState] = reactive(RunState, always_update=True)

    def compose(self) -> ComposeResult:
        table = DataTable(id="flip-table", zebra_stripes=True, cursor_type="row")
        table.add_columns(*FLIP_HEADERS)
        yield table
        yield PlotView(id="flip-bars")
        yield Static("", id="flip-notes")

    def watch_state(self, st: RunState) -> None:
        if not self.is_mounted:
            return
        classes = (st.spec.get("data") or {}).get("classes")
        rows = flip_rows(st.tables.get("flip_rates", []), classes)
        table = self.query_one("#flip-table", DataTable)
        if table.row_count != len(rows) or getattr(self, "_last", None) != rows:
            table.clear()
            for r in rows:
                table.add_row(*r.cells())
            self._last = rows
        self.query_one("#flip-bars", PlotView).figure = flip_bars(rows)
        notes = adversarial_lines(rows)
        if not rows:
            notes = ["No flip rates yet: run the flip (and advtrain) experiments."]
        else:
            notes.insert(
                0,
                "[lo, hi]: 95% Wilson interval of the flips pooled over seeds · ρ: Spearman of "
                "influence ranks · ÷ReLU: mean flip rate over 2L-ReLU's · paper: v1 Tables 2–4",
            )
        self.query_one("#flip-notes", Static).update("\n".join(notes))
