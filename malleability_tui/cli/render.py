"""Rich rendering of the event stream for headless runs (never imports textual)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from engine.run.events import Event, Failed, Finished, Log
from engine.run.events import Progress as ProgressEvent

# Tables too long for a terminal summary (they are in the CSVs).
LONG_TABLES = {"eigenvalues", "landscape"}
MAX_ROWS = 40


def fmt(v: Any) -> str:
    """Compact number formatting for tables."""
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v == 0 or 1e-3 <= abs(v) < 1e5:
            return f"{v:.4g}"
        return f"{v:.3e}"
    if v is None:
        return ""
    return str(v)


def table_of(name: str, rows: list[dict[str, Any]], *, max_rows: int = MAX_ROWS) -> Table:
    """A rich table of result rows."""
    cols = list(rows[0]) if rows else []
    # Columns with one value in every row go to the caption, so the table fits 80 columns.
    const = [c for c in cols if len(rows) > 1 and len({fmt(r.get(c)) for r in rows}) == 1]
    cols = [c for c in cols if c not in const]
    caption = ", ".join(f"{c}={fmt(rows[0].get(c))}" for c in const)
    t = Table(
        title=name,
        title_justify="left",
        header_style="bold",
        caption=caption or None,
        caption_justify="left",
    )
    for c in cols:
        t.add_column(c, overflow="fold")
    for r in rows[:max_rows]:
        t.add_row(*(fmt(r.get(c)) for c in cols))
    if len(rows) > max_rows:
        more = f"… {len(rows) - max_rows} more rows in {name}.csv"
        t.caption = f"{caption}; {more}" if caption else more
    return t


class ProgressRenderer:
    """Two bars (the sweep and the cell in progress) plus log lines."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self.progress = Progress(
            TextColumn("{task.description}", justify="left"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            disable=quiet,
        )
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> ProgressRenderer:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def show(self, ev: Event) -> None:
        if isinstance(ev, ProgressEvent):
            label = {"experiments": "experiments", "sweep": "sweep", "cell": "cell"}.get(
                ev.task, ev.task
            )
            tid = self._tasks.get(label)
            desc = f"{label}: {ev.message}" if ev.message else label
            if tid is None:
                tid = self._tasks[label] = self.progress.add_task(desc, total=max(ev.total, 1))
            self.progress.update(tid, completed=ev.done, total=max(ev.total, 1), description=desc)
        elif isinstance(ev, Log) and not self.quiet:
            style = "yellow" if ev.level == "warning" else "dim"
            self.progress.console.print(f"[{style}]{ev.message}[/]", highlight=False)
        elif isinstance(ev, (Finished, Failed)):
            for tid in self._tasks.values():
                self.progress.update(tid, visible=False)
