"""Guard notes under a panel: which models failed a guard, in which cells (pure)."""

from __future__ import annotations

from typing import Any


def guard_notes(rows: list[dict[str, Any]]) -> list[str]:
    """``⚠ MLP-Attn: at chance in 4 of 4 cells (m=16 seed=0, …): their numbers are not
    results`` per model that fails a guard, from the rows' ``converged`` / ``above_chance``
    columns (any table that has them: train, ntk_distance, flip_rates, sharpness), worded
    by ``engine.results.guards`` as every summary line is. Rows without the columns (older
    runs) say nothing."""
    from rich.markup import escape

    from engine.results import MARK, cells_of, failed_cells, guard_note

    failed = failed_cells(rows)
    out = []
    for model in dict.fromkeys(str(r.get("model", "?")) for r in rows):
        note = guard_note(failed, model, cells_of(rows, model))
        if note:
            out.append(
                f"[yellow]{MARK} {escape(model)}: {escape(note)}: their numbers are not results[/yellow]"
            )
    return out
