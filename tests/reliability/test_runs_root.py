"""One runs root: $MALLEABILITY_RUNS is honoured by every command and the TUI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from reliability_support import invoke, one_line_failure

from engine.run.paths import runs_root
from engine.run.runs import find_run, list_runs


def test_runs_root_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLEABILITY_RUNS", raising=False)
    assert runs_root() == Path("runs")
    monkeypatch.setenv("MALLEABILITY_RUNS", str(tmp_path / "env"))
    assert runs_root() == tmp_path / "env"
    assert runs_root(tmp_path / "given") == tmp_path / "given"


def test_tui_settings_use_the_runs_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from malleability_tui.app import Settings

    monkeypatch.setenv("MALLEABILITY_RUNS", str(tmp_path / "env"))
    assert Settings().runs_root == tmp_path / "env"


@pytest.fixture
def elsewhere(good_run: Path, sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A runs root that is not ./runs, holding one run and one reproduce folder."""
    root = sandbox / "elsewhere"
    monkeypatch.setenv("MALLEABILITY_RUNS", str(root))
    shutil.copytree(good_run, root / "one")
    shutil.copytree(good_run, root / "rep" / "part")
    (root / "rep" / "reproduce.json").write_text(json.dumps({"parts": [{"key": "part"}]}))
    return root


def test_find_run_by_name_under_the_root(elsewhere: Path) -> None:
    assert find_run("one") == elsewhere / "one"
    assert find_run("rep") is None  # not a run directory
    assert find_run("rep", reproduce=True) == elsewhere / "rep"
    assert find_run(elsewhere / "one") == elsewhere / "one"
    assert [r["name"] for r in list_runs()] == ["one"]


def test_report_and_show_find_names_under_the_env_root(elsewhere: Path) -> None:
    res = invoke("report", "rep")
    assert res.exit_code == 0, res.output
    assert (elsewhere / "rep" / "report.md").is_file()
    res = invoke("runs", "show", "one")
    assert res.exit_code == 0, res.output
    line = one_line_failure(invoke("report", "nothing-here"))
    assert "no run directory 'nothing-here'" in line
