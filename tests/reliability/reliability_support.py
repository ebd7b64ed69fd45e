"""Helpers of the hostile-input suite: one-line failures, a tiny real run, tree snapshots.

Test modules import these as ``from reliability_support import ...`` (a module name of
its own, as ``tui_support``); the fixtures are in ``conftest.py``."""

from __future__ import annotations

import os
from pathlib import Path

from typer.testing import CliRunner

from malleability_tui.cli.main import app

TINY = [
    "--dataset",
    "digits",
    "--experiment",
    "train",
    "--widths",
    "8",
    "--epochs",
    "2",
    "--seeds",
    "0",
    "--n-train",
    "60",
    "--n-test",
    "30",
    "--models",
    "relu",
    "--device",
    "cpu",
    "--quiet",
]


runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def one_line_failure(res) -> str:
    """Assert a clean failure (non-zero exit, one line, no traceback); return the line."""
    out = res.output
    assert res.exit_code not in (0, None), out
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in out, out
    # informational "note:" lines (e.g. the quick preset's departures) may come first
    lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("note: ")]
    assert len(lines) == 1, out
    return lines[0]


def tree(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (folders: -1), for "nothing else was written"."""
    return {
        str(p.relative_to(root)): (p.stat().st_size if p.is_file() else -1) for p in root.rglob("*")
    }


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
