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
