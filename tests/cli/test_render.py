"""The headless progress renderer: the cell bar's timer is the cell's, warnings once."""

from __future__ import annotations

import io
import time

from rich.console import Console

from engine.run.events import Log, Progress
from malleability_tui.cli.render import ProgressRenderer


def test_cell_timer_resets_per_cell_and_warnings_print_once() -> None:
    con = Console(file=io.StringIO(), width=80, force_terminal=False)
    with ProgressRenderer(con) as pr:
        pr.show(Progress("cell", 0, 10, "train 2L-ReLU m=8", cell="train/d/relu/8/0"))
        pr.show(Progress("cell", 10, 10, "train 2L-ReLU m=8", cell="train/d/relu/8/0"))
        task = pr.progress.tasks[0]
        first = task.start_time
        time.sleep(0.02)
        pr.show(Progress("cell", 1, 20, "train MLP-Attn m=8", cell="train/d/attn/8/0"))
        task = pr.progress.tasks[0]
        assert task.completed == 1 and task.total == 20
        assert first is not None and task.start_time is not None and task.start_time > first
        for _ in range(3):
            pr.show(Log("⚠ MLP-Attn not converged", "warning"))
    assert con.file.getvalue().count("⚠ MLP-Attn not converged") == 1  # type: ignore[attr-defined]


def test_a_column_too_wide_for_80_goes_to_the_caption_not_into_the_names() -> None:
    """A free-text column (a PBRF row's ``dropped`` reasons) wider than the terminal left
    beside the key columns made rich cut the model names to "ML…"; it is left to the CSV
    and named in the caption, and every name prints whole."""
    from malleability_tui.cli.render import print_table

    why = "153: floor (twice the steps): kink state did not settle in 400 rounds"
    rows = [
        {"model": m, "seed": s, "spearman": 0.98 - s / 100, "dropped": why if m[0] == "M" else ""}
        for m in ("2L-ReLU", "MLP-Attn")
        for s in (0, 1, 2)
    ]
    buf = io.StringIO()
    print_table(Console(file=buf, width=80, color_system=None), "influence_check", rows)
    out = buf.getvalue()
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "MLP-Attn" in out and "2L-ReLU" in out and "…" not in out.split("dropped")[0], out
    assert "dropped: wider than 80 columns, in influence_check.csv" in out, out
