"""Fixtures of the hostile-input suite (helpers: ``reliability_support``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from reliability_support import TINY, invoke  # noqa: E402


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
