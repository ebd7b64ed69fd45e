"""Rich rendering for the CLI: result tables that fit 80 columns, the headless progress bars.

Never imports textual. Numbers print through ``malleability_tui.text`` (one implementation
with the TUI); the engine's event types load on the first event, so ``--help`` stays light.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.padding import Padding
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from malleability_tui.text import encodable, number

if TYPE_CHECKING:
    from engine.run.events import Event

WIDTH = 80
"""The terminal width every CLI table is laid out for (an 80×24 SSH session)."""
LONG_TABLES = {"eigenvalues", "landscape"}
"""Tables too long for a terminal summary (they are in the CSVs)."""
MAX_ROWS = 40

KEY_COLUMNS = (
    "model",
    "dataset",
    "attack",
    "training",
    "direction",
    "kernel",
    "target",
    "width",
    "d_k",
    "eps",
    "seed",
    "index",
)
"""Columns that say which cell a row is: repeated in every part of a table split to fit."""

HEADERS = {
    "ntk_distance": "ntk_dist",
    "ntk_distance_rel": "ntk_rel",
    "kernel_distance_init": "k_dist_0",
    "kernel_distance_final": "k_dist_T",
    "kernel_drift": "k_drift",
    "train_loss": "loss",
    "final_loss": "loss",
    "test_accuracy": "test_acc",
    "train_accuracy": "train_acc",
    "lin_distance": "lin_dist",
    "lin_distance_rel": "lin_rel",
    "lin_test_accuracy": "lin_acc",
    "above_chance": "> chance",
    "epochs_run": "epochs",
    "converged": "conv",
    "steps_to_converge": "steps",
    "kappa_G": "κ(G)",
    "kappa_G3": "κ(G³)",
    "kappa_G_cubed": "κ(G)³",
    "kappa_G3_direct": "κ(G³) meas",
    "kappa_d": "κ_d",
    "width_threshold_v1": "m ≥ (v1)",
    "width_threshold_v2": "m ≥ (v2)",
    "flip_rate": "flip",
    "spearman": "ρ",
    "topk_overlap": "top-k",
    "n_selected": "n_sel",
    "n_flipped": "n_flip",
    "n_helpful": "n_help",
    "flipped_helpful": "flip_help",
    "flipped_harmful": "flip_harm",
    "hessian_top_eig": "λ_max",
    "hessian_trace": "tr H",
    "adaptive_sharpness": "S_ad",
    "adaptive_rho": "ρ_ad",
    "loss_initial": "loss_0",
    "loss_final": "loss_T",
}
"""Column name → the short header a table prints (the CSVs keep the full names)."""


def header(col: str) -> str:
    """The short header of a result column (the column name when it has none)."""
    return HEADERS.get(col, col)


def _width(head: str, cells: Sequence[str]) -> int:
    return max([len(head), *(len(c) for c in cells)])


def _packs(
    keys: list[str], values: list[str], widths: dict[str, int], limit: int
) -> list[list[str]]:
    """Value columns in groups that fit ``limit`` beside the key columns (a rich table with
    a box spends 3 characters a column and 1 more)."""
    base = 1 + sum(widths[k] + 3 for k in keys)
    packs: list[list[str]] = []
    cur: list[str] = []
    used = base
    for c in values:
        w = widths[c] + 3
        if cur and used + w > limit:
            packs.append(cur)
            cur, used = [], base
        cur.append(c)
        used += w
    if cur or not packs:
        packs.append(cur)
    return packs


def _caption_name(col: str, cols: Sequence[str]) -> str:
    """A constant column's name in the caption: ``epochs`` is the minimum when the table
    also has each cell's ``epochs_run`` (headed "epochs"), so it says so."""
    return "min_epochs" if col == "epochs" and "epochs_run" in cols else col


def _layout(
    rows: list[dict[str, Any]], max_rows: int, width: int, keys: Sequence[str], encoding: str
) -> tuple[dict[str, list[str]], dict[str, str], list[str], list[str], list[str], list[str]]:
    """(cell text, headers, constant columns, key columns, value columns, value columns
    too wide to sit beside the keys in ``width``: free text such as a PBRF row's ``dropped``
    reasons, which rich would fit by cutting the key columns' names)."""
    cols = list(rows[0]) if rows else []
    shown = rows[:max_rows]
    text = {c: [encodable(number(r.get(c)), encoding) for r in shown] for c in cols}
    heads = {c: encodable(header(c), encoding) for c in cols}
    const = [c for c in cols if len(rows) > 1 and len({number(r.get(c)) for r in rows}) == 1]
    cols = [c for c in cols if c not in const]
    key_cols = [c for c in cols if c in keys]
    base = 1 + sum(_width(heads[k], text[k]) + 3 for k in key_cols)
    values = [c for c in cols if c not in key_cols]
    wide = [c for c in values if base + _width(heads[c], text[c]) + 3 > width]
    return text, heads, const, key_cols, [c for c in values if c not in wide], wide


def table_caption(
    name: str,
    rows: list[dict[str, Any]],
    *,
    max_rows: int = MAX_ROWS,
    encoding: str = "utf-8",
    width: int = WIDTH,
    keys: Sequence[str] = KEY_COLUMNS,
) -> str:
    """The columns with one value in every row (``dataset=digits, seed=0, …``), the
    columns too wide for ``width`` and the rows left out, as ``table_parts`` puts them
    under its last part."""
    cols = list(rows[0]) if rows else []
    _, _, const, _, _, wide = _layout(rows, max_rows, width, keys, encoding)
    caption = ", ".join(f"{_caption_name(c, cols)}={number(rows[0].get(c))}" for c in const)
    notes = []
    if wide:
        notes.append(f"{', '.join(wide)}: wider than {width} columns, in {name}.csv")
    if len(rows) > max_rows:
        notes.append(f"… {len(rows) - max_rows} more rows in {name}.csv")
    caption = "; ".join([caption, *notes] if caption else notes)
    return encodable(caption, encoding)


def table_parts(
    name: str,
    rows: list[dict[str, Any]],
    *,
    max_rows: int = MAX_ROWS,
    width: int = WIDTH,
    keys: Sequence[str] = KEY_COLUMNS,
    encoding: str = "utf-8",
    caption: bool = True,
) -> list[Table]:
    """Result rows as rich tables no wider than ``width``: columns with one value in every
    row go to the caption, headers are abbreviated, and the columns that do not fit go to
    further parts (``name (2/3)``) that repeat the key columns; a cell never wraps. The
    text is as a stream of ``encoding`` prints it (``κ`` → ``kappa`` on an ASCII stdout,
    ``text.encodable``) before the columns are measured. ``caption=False`` leaves the
    caption (``table_caption``) to the caller, to print at the console's full width."""

    def spell(s: str) -> str:
        return encodable(s, encoding)

    shown = rows[:max_rows]
    text, heads, _, key_cols, values, _ = _layout(rows, max_rows, width, keys, encoding)
    under = (
        table_caption(name, rows, max_rows=max_rows, encoding=encoding, width=width, keys=keys)
        if caption
        else ""
    )
    widths = {c: _width(heads[c], text[c]) for c in key_cols + values}
    packs = _packs(key_cols, values, widths, width)
    tables = []
    for i, pack in enumerate(packs):
        title = spell(name if len(packs) == 1 else f"{name} ({i + 1}/{len(packs)})")
        last = i == len(packs) - 1
        t = Table(
            title=title,
            title_justify="left",
            header_style="bold",
            caption=under if last and under else None,
            caption_justify="left",
        )
        for c in key_cols + pack:
            t.add_column(heads[c], no_wrap=True, justify="left" if c in keys else "right")
        for j in range(len(shown)):
            t.add_row(*(text[c][j] for c in key_cols + pack))
        tables.append(t)
    return tables


def print_table(console: Console, name: str, rows: list[dict[str, Any]]) -> None:
    """Print ``table_parts(name, rows)``, then its caption wrapped at the console's width
    (under the last part it would wrap at that part's width, which may be 29 columns)."""
    width = min(WIDTH, console.width)
    for t in table_parts(name, rows, width=width, encoding=console.encoding, caption=False):
        console.print(t)
    if under := table_caption(name, rows, encoding=console.encoding, width=width):
        from rich.text import Text

        console.print(Text(under, style="italic"), width=width, highlight=False)


def print_headlines(
    console: Console, summary: dict[str, Any], skip: set[str] | None = None
) -> None:
    """Each summary section's headline lines, but those already printed as one of the
    warnings in ``skip`` (a guard's line is said once per run)."""
    said = skip or set()
    for section, data in summary.items():
        lines = data.get("headline") if isinstance(data, dict) else None
        if not lines:
            continue
        lines = [ln for ln in ([lines] if isinstance(lines, str) else lines) if not _said(ln, said)]
        if lines:
            console.print(f"[bold]{section}[/]")
            for ln in lines:  # wrapped lines keep the indent: each headline reads as one
                text = Text(encodable(ln, console.encoding))  # wrapped as it will print
                console.print(Padding(text, (0, 0, 0, 2)), highlight=False)


def _said(line: str, warnings: set[str]) -> bool:
    return any(w == line or w.startswith(line + " (") for w in warnings)


class ProgressRenderer:
    """Two bars (the sweep and the cell in progress) plus log lines; each warning once."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self.progress = Progress(
            TextColumn("{task.description}", justify="left"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            disable=quiet,
        )
        self._tasks: dict[str, Any] = {}
        self._cell = ""
        self.warned: set[str] = set()
        """Warnings printed so far (a guard's line is printed once per run)."""

    def __enter__(self) -> ProgressRenderer:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def show(self, ev: Event) -> None:
        from engine.run.events import Failed, Finished, Log
        from engine.run.events import Progress as ProgressEvent

        if isinstance(ev, ProgressEvent):
            label = ev.task
            tid = self._tasks.get(label)
            desc = f"{label}: {ev.message}" if ev.message else label
            total = max(ev.total, 1)
            if tid is None:
                tid = self._tasks[label] = self.progress.add_task(desc, total=total)
            elif label == "cell" and ev.cell != self._cell:
                self.progress.reset(tid, total=total)  # the timer and the ETA are the cell's
            if label == "cell":
                self._cell = ev.cell
            self.progress.update(tid, completed=ev.done, total=total, description=desc)
        elif isinstance(ev, Log) and not self.quiet:
            if ev.level == "warning":
                if ev.message in self.warned:
                    return
                self.warned.add(ev.message)
            style = "yellow" if ev.level == "warning" else "dim"
            self.progress.console.print(ev.message, style=style, highlight=False, markup=False)
        elif isinstance(ev, (Finished, Failed)):
            for tid in self._tasks.values():
                self.progress.update(tid, visible=False)
