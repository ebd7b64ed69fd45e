"""RunsBrowser: past runs of the run store; open one, mark two and compare them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from engine.run.runs import RunListing
from malleability_tui.views.runs import headline_numbers, spec_brief

COLUMNS = ("", "status", "name")
"""The run's name carries its experiment and data set (``<time>-<experiment>-<data>``, or
the folder the user named): the detail pane beside it spells both out."""
NAME_ROOM = 30
"""Columns of the name at 80×24 (the table's 48 less the mark and status columns)."""


def _spec_dict(path: Path) -> dict:
    try:
        from engine.run.spec import RunSpec

        return RunSpec.load(path / "spec.toml").to_dict()
    except Exception:  # noqa: BLE001 - a broken run must not break the list
        return {}


def _summary(path: Path) -> dict:
    try:
        d = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return d if isinstance(d, dict) else {}


RESUMABLE = ("interrupted", "cancelled", "partial", "failed")
"""Statuses a run can be continued from (its finished cells are kept and skipped)."""


def resume_command(path: str) -> str:
    """The CLI's way to continue ``path`` (relative to the working folder when under it)."""
    p = Path(path)
    try:
        p = p.resolve().relative_to(Path.cwd().resolve())
    except (OSError, ValueError):
        pass
    return f"malleability headless --resume --out {p}"


class RunsBrowser(Horizontal):
    """The app sets ``runs`` (from ``list_runs``, whose status is the run store's: a
    ``running`` run without a live writer reads ``interrupted``); Enter posts ``OpenRun``,
    ``u`` posts ``ResumeRun``; ``v`` opens the two marked runs side by side (``CompareScreen``)."""

    DEFAULT_CSS = """
    RunsBrowser #runs-table { width: 3fr; min-width: 36; }
    RunsBrowser #run-detail-scroll { width: 2fr; min-width: 24; border-left: solid $panel-lighten-2; padding: 0 1; }
    RunsBrowser #run-detail { height: auto; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open", show=True),
        Binding("u", "resume", "Resume"),
        Binding("space", "mark", "Mark", key_display="␣"),
        Binding("v", "compare", "Compare"),
        Binding("f5", "refresh_runs", "Refresh", show=False),
    ]

    class OpenRun(Message):
        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    class ResumeRun(Message):
        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    class Refresh(Message):
        pass

    class CompareRuns(Message):
        """Compare the two marked runs (the app opens the compare screen)."""

        def __init__(self, a: str, b: str) -> None:
            super().__init__()
            self.a = a
            self.b = b

    runs: reactive[list[RunListing]] = reactive(list, always_update=True)

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.marked: list[str] = []
        self.live: str | None = None
        """The run directory of the app's own job (running for real)."""

    def compose(self) -> ComposeResult:
        t: DataTable[str] = DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        t.add_columns(*COLUMNS)
        yield t
        with VerticalScroll(id="run-detail-scroll"):
            yield Static("[dim]No runs yet. Start one from Setup (1).[/dim]", id="run-detail")

    def watch_runs(self, runs: list[RunListing]) -> None:
        if not self.is_mounted:
            return
        self.refresh_bindings()
        t = self.query_one("#runs-table", DataTable)
        t.clear()
        for r in runs:
            mark = "✓" if r["path"] in self.marked else ""
            t.add_row(mark, r["status"], short_name(r["name"], NAME_ROOM), key=r["path"])
        self._show_detail()

    def selected(self) -> str | None:
        t = self.query_one("#runs-table", DataTable)
        if not self.runs or t.cursor_row < 0 or t.cursor_row >= len(self.runs):
            return None
        return self.runs[t.cursor_row]["path"]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()
        self.refresh_bindings()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def _show_detail(self) -> None:
        path = self.selected()
        det = self.query_one("#run-detail", Static)
        if path is None:
            det.update("[dim]No runs yet. Start one from Setup (1).[/dim]")
            return
        p = Path(path)
        width = det.content_size.width or 21  # before layout: the pane's least width
        lines = [f"[b]{escape(ln)}[/b]" for ln in name_lines(p.name, width)]
        status = next((r["status"] for r in self.runs if r["path"] == path), "?")
        if status in RESUMABLE and path != self.live:
            why = "its process died" if status == "interrupted" else f"it ended {status}"
            lines.append(f"[yellow]{why}: u resumes it here (finished cells kept), or run[/yellow]")
            lines.append(resume_command(path))
        lines += [f"{k}: {v}" for k, v in spec_brief(_spec_dict(p))]
        heads = headline_numbers(_summary(p))
        if heads:
            lines.append("")
            lines.append("[b]headline[/b]")
            lines += heads
        lines.append("")
        lines.append("[dim]enter: open · u: resume · space: mark · v: compare two marked[/dim]")
        det.update("\n".join(ln if ln.startswith("[") else escape(ln) for ln in lines))

    def action_open(self) -> None:
        path = self.selected()
        if path:
            self.post_message(self.OpenRun(path))

    def _resumable(self) -> bool:
        path = self.selected()
        status = next((r["status"] for r in self.runs if r["path"] == path), "?")
        running = bool(getattr(getattr(self.app, "runner", None), "running", False))
        return path is not None and status in RESUMABLE and path != self.live and not running

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # Shown (and live) only where they apply, so the footer fits 80 columns.
        if action == "resume":
            return self._resumable() and len(self.marked) < 2
        if action == "compare":
            return len(self.marked) == 2
        return True

    def action_resume(self) -> None:
        path = self.selected()
        if path and self._resumable():
            self.post_message(self.ResumeRun(path))

    def action_mark(self) -> None:
        path = self.selected()
        if not path:
            return
        if path in self.marked:
            self.marked.remove(path)
        else:
            self.marked = (self.marked + [path])[-2:]
        t = self.query_one("#runs-table", DataTable)
        row = t.cursor_row
        self.runs = self.runs
        t.move_cursor(row=row)
        self.refresh_bindings()

    def action_compare(self) -> None:
        if len(self.marked) == 2:
            self.post_message(self.CompareRuns(*self.marked))

    def action_refresh_runs(self) -> None:
        self.post_message(self.Refresh())


def short_name(name: str, room: int) -> str:
    """``name`` whole when it fits ``room``, else its time stamp cut in the middle and its
    end (experiment and data set) kept: ``20261203-19…advtrain-digits``."""
    if len(name) <= room:
        return name
    tail = room - 12
    return name[:11] + "…" + name[-tail:]


def name_lines(name: str, width: int) -> list[str]:
    """``name`` in lines of ``width`` broken after its hyphens (never inside a word); a
    piece longer than ``width`` keeps a line of its own."""
    lines = [""]
    for piece in re.findall(r"[^-]+-?|-", name):
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
    return lines
