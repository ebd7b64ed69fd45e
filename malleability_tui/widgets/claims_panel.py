"""ClaimsPanel: the reproduction's claims checklist, one line per claim and data set."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from malleability_tui.state import RunState
from malleability_tui.views.claims import (
    CHECKLIST_TITLE,
    checklist_details,
    checklist_lines,
    checklist_verdicts,
    verdict_mark,
)

MARK_STYLE = {"✓": "green", "✗": "red", "?": "yellow", "·": "dim"}
EMPTY = (
    "No reproduction open. `malleability reproduce` writes one; open it with "
    "`malleability-tui RUNS/<time>-reproduce` (the folder with reproduce.json)."
)


def claims_text(summary: dict) -> Text:
    """The checklist (coloured by verdict), then each claim's statistic (the same lines as
    ``malleability reproduce`` prints: ``malleability_tui.views.claims``)."""
    items = summary.get("checklist") or []
    if not items:
        return Text(EMPTY, style="dim")
    out = Text(CHECKLIST_TITLE + "\n", style="bold")
    for line, verdict in zip(checklist_lines(summary), checklist_verdicts(summary)):
        out.append(line + "\n", style=MARK_STYLE.get(verdict_mark(verdict), "") if verdict else "")
    out.append("\n")
    for d in checklist_details(summary):
        out.append(d + "\n\n", style="")
    return out


class ClaimsPanel(VerticalScroll):
    """Scrolls; the lines come from the reproduction's summary.json."""

    DEFAULT_CSS = """
    ClaimsPanel #claims-text { height: auto; }
    """

    can_focus = True

    state: reactive[RunState] = reactive(RunState, always_update=True)

    def compose(self) -> ComposeResult:
        yield Static(Text(EMPTY, style="dim"), id="claims-text")

    def watch_state(self, st: RunState) -> None:
        if self.is_mounted:
            self.query_one("#claims-text", Static).update(claims_text(st.summary))
