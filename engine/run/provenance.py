"""Where and under what a run ran: the source tree's commit and the machine's load, recorded
by reproductions (reproduce.json) and by every run directory (env.json)."""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the OS has none)."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


@cache  # the tree a process runs does not change under it: one git call, not one a run
def source_commit() -> str | None:
    """The source tree's git commit (with ``-dirty`` when it has changes), None outside git."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=40"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None
