"""CompareScreen: two runs side by side (spec, status, headline numbers, table sizes)."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from malleability_tui.format import fmt, headline_numbers, spec_brief, sweep_series
from malleability_tui.state import RunState


def run_column(st: RunState) -> str:
    """The text of one side of the comparison."""
    name = st.run_dir.rstrip("/").rsplit("/", 1)[-1]
    lines = [f"[b]{escape(name)}[/b]  ({escape(st.status)})"]
    lines += [f"{k}: {escape(v)}" for k, v in spec_brief(st.spec)]
    heads = headline_numbers(st.summary, limit=12)
    if heads:
        lines += ["", "[b]headline[/b]"] + [escape(h) for h in heads]
    for table, column in (("ntk_distance", "ntk_distance"), ("train", "test_accuracy")):
        data = sweep_series(st.tables.get(table, []), column)
        if data:
            lines += ["", f"[b]{column} by width[/b]"]
            for model, (ws, mean, _std, _n) in data.items():
                lines.append(f"{model}: " + ", ".join(f"{w}:{fmt(m)}" for w, m in zip(ws, mean)))
    lines += ["", "[b]tables[/b]"] + [f"{k}: {len(v)} rows" for k, v in sorted(st.tables.items())]
    return "\n".join(lines)


class CompareScreen(Screen[None]):
    DEFAULT_CSS = """
    CompareScreen > Horizontal > VerticalScroll { width: 1fr; border: round $panel-lighten-2; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q", "close", "Back")]

    def __init__(self, a: RunState, b: RunState) -> None:
        super().__init__()
        self.a, self.b = a, b

    def compose(self) -> ComposeResult:
        with Horizontal():
            with VerticalScroll():
                yield Static(run_column(self.a), id="left")
            with VerticalScroll():
                yield Static(run_column(self.b), id="right")
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
