"""Helpers of the hostile-input suite: one-line failures, a tiny real run, tree snapshots."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
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
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1, out
    return lines[0]


def tree(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (folders: -1), for "nothing else was written"."""
    return {
        str(p.relative_to(root)): (p.stat().st_size if p.is_file() else -1) for p in root.rglob("*")
    }


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder that is also the runs root and the crash-log folder's parent."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MALLEABILITY_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("MALLEABILITY_LOG_DIR", str(tmp_path / "logs"))
    return tmp_path


@pytest.fixture(scope="session")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished tiny run (copy it before damaging it)."""
    out = tmp_path_factory.mktemp("good") / "run"
    res = invoke("headless", *TINY, "--out", out)
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def run_copy(good_run: Path, sandbox: Path) -> Path:
    dst = sandbox / "runs" / "copy"
    shutil.copytree(good_run, dst)
    return dst


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
