"""FlipsPanel: flip rate ± CI per data set × model × attack × ε × training, with the paper's."""

from __future__ import annotations

import math

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from malleability_tui.format import FLIP_HEADERS, FlipRow, flip_rows
from malleability_tui.state import RunState


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


class FlipsPanel(Vertical):
    """The flip-rate table and the standard → adversarial training comparison."""

    DEFAULT_CSS = """
    FlipsPanel DataTable { height: 1fr; }
    FlipsPanel #flip-notes { height: auto; max-height: 8; color: $text-muted; }
    """

    state: reactive[RunState] = reactive(RunState, always_update=True)

    def compose(self) -> ComposeResult:
        table = DataTable(id="flip-table", zebra_stripes=True, cursor_type="row")
        table.add_columns(*FLIP_HEADERS)
        yield table
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
        notes = adversarial_lines(rows)
        if not rows:
            notes = ["No flip rates yet: run the flip (and advtrain) experiments."]
        else:
            notes.insert(
                0,
                "flip %: mean ± std over seeds [95% Wilson interval of the flips pooled over seeds] · ρ: Spearman of influence ranks · Attn/ReLU: ratio of mean flip rates · paper: PAPER.md v1 Tables 2–4",
            )
        self.query_one("#flip-notes", Static).update("\n".join(notes))
