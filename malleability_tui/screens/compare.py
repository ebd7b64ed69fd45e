"""CompareScreen: two runs side by side, row by row, with their differences highlighted."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from malleability_tui.state import RunState
from malleability_tui.text import number as fmt
from malleability_tui.views.runs import headline_numbers, spec_brief
from malleability_tui.views.sweep import sweep_series
from malleability_tui.widgets.key_footer import KeyFooter

Row = tuple[str, str, str, str]
"""(section, what, run A's value, run B's value); "" where a run has nothing."""


def _values(st: RunState) -> dict[tuple[str, str], str]:
    """(section, what) → text for one run: spec, status, numbers by width, headlines, tables."""
    out: dict[tuple[str, str], str] = {("run", "status"): st.status}
    for k, v in spec_brief(st.spec):
        out[("spec", k)] = v
    for table, column in (("ntk_distance", "ntk_distance"), ("train", "test_accuracy")):
        for model, (ws, mean, _std, _n) in sweep_series(
            st.tables.get(table, []), column, table
        ).items():
            for w, m in zip(ws, mean):
                out[(column, f"{model} m={w}")] = fmt(m)
    for i, line in enumerate(headline_numbers(st.summary, limit=12)):
        sec, _, rest = line.partition(": ")
        out[("headline", f"{sec} {i + 1}" if rest else str(i + 1))] = rest or line
    for name, rows in sorted(st.tables.items()):
        out[("tables", name)] = f"{len(rows)} rows"
    return out


def compare_rows(a: RunState, b: RunState) -> list[Row]:
    """The rows of the comparison: every (section, what) either run has, in a stable order
    (run, spec, numbers by width, headlines, tables), A's keys first."""
    va, vb = _values(a), _values(b)
    keys = list(va) + [k for k in vb if k not in va]
    order = {
        s: i
        for i, s in enumerate(
            ("run", "spec", "ntk_distance", "test_accuracy", "headline", "tables")
        )
    }
    keys.sort(key=lambda k: order.get(k[0], len(order)))  # stable: A's order within a section
    return [(sec, what, va.get((sec, what), ""), vb.get((sec, what), "")) for sec, what in keys]


def _name(st: RunState) -> str:
    return st.run_dir.rstrip("/").rsplit("/", 1)[-1] or "(unsaved)"


def compare_table(a: RunState, b: RunState) -> tuple[Table, int]:
    """A Rich table of ``compare_rows`` (values that differ in bold yellow) and how many differ."""
    t = Table(expand=True, box=None, pad_edge=False, show_edge=False, header_style="bold")
    t.add_column("", style="dim", no_wrap=True, ratio=2)
    t.add_column(Text(_name(a)), ratio=3, overflow="fold")
    t.add_column(Text(_name(b)), ratio=3, overflow="fold")
    differ = 0
    last = ""
    for sec, what, x, y in compare_rows(a, b):
        if sec != last:
            t.add_row(Text(sec, style="bold"), "", "")
            last = sec
        style = "bold yellow" if x != y else ""
        differ += x != y
        t.add_row(f"  {what}", Text(x or "–", style=style), Text(y or "–", style=style))
    return t, differ


class CompareScreen(Screen[None]):
    """Only its own keys work here (escape / q go back); the panels' keys wait behind it."""

    DEFAULT_CSS = """
    CompareScreen #compare-head { height: auto; padding: 0 1; background: $panel; }
    CompareScreen VerticalScroll { padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q", "close", "Back")]

    def __init__(self, a: RunState, b: RunState) -> None:
        super().__init__()
        self.a, self.b = a, b

    def compose(self) -> ComposeResult:
        table, differ = compare_table(self.a, self.b)
        n = len(compare_rows(self.a, self.b))
        yield Static(
            f"Comparing two runs: {differ} of {n} rows differ (highlighted)", id="compare-head"
        )
        with VerticalScroll(id="compare-body"):
            yield Static(table, id="compare-table")
        yield KeyFooter()

    def action_close(self) -> None:
        self.dismiss(None)
