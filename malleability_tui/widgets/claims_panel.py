"""ClaimsPanel: the reproduction's claims checklist, one row per claim and data set;
``enter`` on a row asks the app to show the panel (and sub-run) behind it."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from malleability_tui.state import RunState
from malleability_tui.views.claims import CHECKLIST_TITLE, checklist_details, checklist_rows

MARK_STYLE = {"✓": "green", "✗": "red", "?": "yellow", "·": "dim"}
EMPTY = (
    "No reproduction open. `malleability reproduce` writes one; open it with "
    "`malleability-tui RUNS/<time>-reproduce` (the folder with reproduce.json)."
)
HEADERS = ("", "#", "data", "verdict", "claim")
HINT = "enter: the panel behind a claim · * see the details below"


def reproduction_summary(st: RunState) -> dict[str, Any]:
    """The checklist's summary: the reproduction's, also while one of its sub-runs is open."""
    return dict(st.reproduction.get("summary") or st.summary or {})


def details_text(summary: dict) -> Text:
    """Each claim's statistic (the lines ``malleability reproduce`` prints), or the hint of
    how to open a reproduction."""
    items = summary.get("checklist") or []
    if not items:
        return Text(EMPTY, style="dim")
    out = Text()
    out.append(HINT + "\n\n", style="dim")
    for d in checklist_details(summary):
        out.append(d + "\n\n", style="")
    return out


class ClaimsPanel(Vertical):
    """The checklist (a row per claim × data set) above the statistics, from summary.json."""

    DEFAULT_CSS = """
    ClaimsPanel #claims-title { height: 1; text-style: bold; }
    ClaimsPanel #claims-table { height: auto; max-height: 60%; }
    ClaimsPanel #claims-details { height: 1fr; }
    ClaimsPanel #claims-text { height: auto; }
    """

    class ShowClaim(Message):
        """Show the panel behind one checklist item (a dict of summary.json's checklist)."""

        def __init__(self, item: dict[str, Any]) -> None:
            super().__init__()
            self.item = item

    state: reactive[RunState] = reactive(RunState, always_update=True)

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._items: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield Static(CHECKLIST_TITLE, id="claims-title")
        table: DataTable[Text] = DataTable(id="claims-table", cursor_type="row")
        table.add_columns(*HEADERS)
        yield table
        with VerticalScroll(id="claims-details"):
            yield Static(Text(EMPTY, style="dim"), id="claims-text")

    def on_mount(self) -> None:
        self._show(reproduction_summary(self.state))

    def watch_state(self, st: RunState) -> None:
        if self.is_mounted:
            self._show(reproduction_summary(st))

    def _show(self, summary: dict[str, Any]) -> None:
        items = list(summary.get("checklist") or [])
        table = self.query_one("#claims-table", DataTable)
        if items != self._items or table.row_count != len(items):
            row = table.cursor_row
            table.clear()
            for cells in checklist_rows(summary):
                style = MARK_STYLE.get(cells[0], "")
                table.add_row(*(Text(c, style=style) for c in cells))
            if items and 0 <= row < len(items):
                table.move_cursor(row=row)
            self._items = items
        self.query_one("#claims-title").display = bool(items)
        table.display = bool(items)
        self.query_one("#claims-text", Static).update(details_text(summary))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self._items):
            self.post_message(self.ShowClaim(self._items[event.cursor_row]))
