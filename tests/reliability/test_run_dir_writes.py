"""Issue #29: no command writes into a run directory but the run's own writer.

A report, a saved config, figures or an export aimed at a run's files (or anywhere inside
a run or reproduce directory, or a folder holding a writer's .lock) is refused with one
line and the run is left byte for byte as it was; the commands' own outputs in the run
they read (``<run>/report.md``, ``<run>/figures``) stay allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_support import TINY, invoke, one_line_failure, tree

from engine.errors import ConfigError
from engine.run.paths import check_file_target, check_folder_target, run_dir_around


@pytest.mark.parametrize("name", ["train.csv", "summary.json", "env.json", "spec.toml", "new.md"])
def test_report_into_a_run_is_refused(run_copy: Path, name: str) -> None:
    before = tree(run_copy)
    res = invoke("report", run_copy, "--format", "html", "--to", run_copy / name)
    assert "outside the run directory" in one_line_failure(res)
    assert tree(run_copy) == before


def test_save_config_over_a_runs_spec_is_refused(run_copy: Path) -> None:
    spec = (run_copy / "spec.toml").read_bytes()
    res = invoke("headless", *TINY, "--epochs", "9", "--save-config", run_copy / "spec.toml")
    assert "outside the run directory" in one_line_failure(res)
    assert (run_copy / "spec.toml").read_bytes() == spec


def test_export_and_figures_into_another_run_are_refused(run_copy: Path, good_run: Path) -> None:
    before = tree(run_copy)
    for args in (
        ["export", good_run, "--to", run_copy, "--force"],
        ["export", good_run, "--format", "json", "--to", run_copy / "sub"],
        ["figures", good_run, "--to", run_copy],
    ):
        assert "outside the run directory" in one_line_failure(invoke(*args)), args
    assert tree(run_copy) == before


def test_a_lock_or_reproduce_json_marks_a_run(tmp_path: Path) -> None:
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / ".lock").write_text('{"pid": 1, "host": "h"}')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / ".lock").write_text("")  # not a run's lock (pytest has one)
    (tmp_path / "repro" / "part").mkdir(parents=True)
    (tmp_path / "repro" / "reproduce.json").write_text("{}")
    assert run_dir_around(tmp_path / "live" / "x.csv") == (tmp_path / "live").resolve()
    assert run_dir_around(tmp_path / "repro" / "part" / "x") == (tmp_path / "repro").resolve()
    assert run_dir_around(tmp_path / "other" / "x.md") is None
    with pytest.raises(ConfigError, match="only the run itself writes there"):
        check_file_target(tmp_path / "live" / "r.md", "to")
    with pytest.raises(ConfigError, match="only the run itself writes there"):
        check_folder_target(tmp_path / "repro" / "figs", "to")


def test_a_symlink_into_a_run_is_refused(run_copy: Path, sandbox: Path) -> None:
    (sandbox / "link").symlink_to(run_copy)
    res = invoke("report", run_copy, "--to", sandbox / "link" / "train.csv")
    assert "outside the run directory" in one_line_failure(res)


def test_the_commands_own_outputs_in_the_run_stay_allowed(run_copy: Path) -> None:
    assert invoke("report", run_copy).exit_code == 0
    assert (run_copy / "report.md").is_file()
    res = invoke("report", run_copy, "--format", "html", "--to", run_copy / "report.html")
    assert res.exit_code == 0, res.output
    assert check_folder_target(run_copy / "figures", "to", own=run_copy / "figures")


def test_a_runs_root_inside_a_run_is_refused(run_copy: Path, monkeypatch) -> None:
    monkeypatch.setenv("MALLEABILITY_RUNS", str(run_copy))
    before = tree(run_copy)
    assert "outside the run directory" in one_line_failure(invoke("headless", *TINY))
    assert tree(run_copy) == before


def test_an_export_is_not_a_run_and_can_be_overwritten(run_copy: Path, sandbox: Path) -> None:
    assert invoke("export", run_copy, "--to", sandbox / "exp").exit_code == 0
    res = invoke("export", run_copy, "--to", sandbox / "exp", "--force")
    assert res.exit_code == 0, res.output
