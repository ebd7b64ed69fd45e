"""Headless CLI: a real quick run, one-line errors, resume, export, runs, import boundary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from malleability_tui.cli.main import app

runner = CliRunner()
TINY = [
    "--dataset",
    "digits",
    "--experiment",
    "train",
    "--quick",
    "--widths",
    "8",
    "--epochs",
    "2",
    "--n-train",
    "60",
    "--n-test",
    "30",
    "--models",
    "relu",
]


def _invoke(args: list[str]):
    return runner.invoke(app, args, catch_exceptions=False)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "r"
    res = _invoke(["headless", *TINY, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_quick_run_writes_complete_directory(run_dir: Path) -> None:
    for f in ("spec.toml", "env.json", "events.jsonl", "summary.json", "train.csv"):
        assert (run_dir / f).is_file(), f
    env = json.loads((run_dir / "env.json").read_text())
    assert env["status"] == "finished" and env["device"] == "cpu"
    rows = (run_dir / "train.csv").read_text().splitlines()
    assert rows[0].startswith("model,dataset,width,seed")
    assert len(rows) == 2  # one model × one width × one seed
    kinds = {json.loads(ln)["kind"] for ln in (run_dir / "events.jsonl").read_text().splitlines()}
    assert {
        "Started",
        "Progress",
        "Metric",
        "TableRow",
        "CellFinished",
        "Summary",
        "Finished",
    } <= kinds


def test_resume_skips_finished_cells(run_dir: Path) -> None:
    before = (run_dir / "train.csv").read_text()
    res = _invoke(["headless", "--resume", "--out", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert (run_dir / "train.csv").read_text() == before
    trained = [json.loads(ln) for ln in (run_dir / "events.jsonl").read_text().splitlines()]
    assert sum(e["kind"] == "CellFinished" for e in trained) == 1
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "finished"
    assert "2L-ReLU" in summary["train"]["best_test_accuracy"]  # the skipped cell still counts


def test_export_and_runs(run_dir: Path, tmp_path: Path) -> None:
    res = _invoke(["export", str(run_dir), "--format", "csv", "--to", str(tmp_path / "csv")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "csv" / "train.csv").read_text() == (run_dir / "train.csv").read_text()
    res = _invoke(["export", str(run_dir), "--format", "json", "--to", str(tmp_path / "js")])
    data = json.loads(next((tmp_path / "js").glob("*.json")).read_text())
    assert data["tables"]["train"][0]["model"] == "2L-ReLU"
    res = _invoke(["runs", "list", "--root", str(run_dir.parent)])
    assert res.exit_code == 0 and run_dir.name in res.output
    res = _invoke(["runs", "show", run_dir.name, "--root", str(run_dir.parent)])
    assert res.exit_code == 0 and "train" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--widths", "0"], "invalid --widths '0': distinct positive integers"),
        (["--widths", "abc"], "invalid --widths"),
        (["--eps", "-0.3"], "invalid --eps '-0.3'"),
        (["--dataset", "imagenet"], "imagenet"),
        (["--experiment", "nope"], "invalid --experiment 'nope'"),
        (["--device", "tpu"], "invalid --device 'tpu'"),
        (["--classes", "3,99"], "99"),
    ],
)
def test_bad_input_is_one_line_error(args: list[str], message: str, tmp_path: Path) -> None:
    res = runner.invoke(app, ["headless", *TINY, *args, "--out", str(tmp_path / "r")])
    assert res.exit_code != 0
    assert "Traceback" not in res.output
    assert message in res.output
    err_lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(err_lines) == 1, res.output


def test_missing_dataset_says_how_to_get_it(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    res = runner.invoke(
        app,
        [
            "headless",
            *TINY,
            "--dataset",
            "cifar10",
            "--data-dir",
            str(tmp_path / "empty"),
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "malleability data fetch cifar10" in res.output and "--data-dir" in res.output
    assert not (tmp_path / "r").exists()  # nothing half-made
    res = runner.invoke(
        app, ["headless", *TINY, "--dataset", "cifar10", "--data-dir", str(tmp_path / "typo")]
    )
    assert res.exit_code == 1 and "typo" in res.output and "Traceback" not in res.output


def test_diverging_run_is_reported(tmp_path: Path) -> None:
    res = runner.invoke(
        app,
        [
            "headless",
            *TINY,
            "--optimizer",
            "sgd",
            "--classes",
            "3,8",
            "--lr",
            "1e20",
            "--epochs",
            "4",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert res.exit_code == 1 and "diverged" in res.output and "Traceback" not in res.output
    assert json.loads((tmp_path / "r" / "env.json").read_text())["status"] == "failed"


def test_save_config_round_trip(tmp_path: Path) -> None:
    cfg = tmp_path / "spec.toml"
    assert _invoke(["headless", *TINY, "--save-config", str(cfg)]).exit_code == 0
    from engine.run.spec import RunSpec

    spec = RunSpec.load(cfg)
    assert spec.model.widths == (8,) and spec.train.epochs == 2 and spec.quick


def test_headless_never_imports_textual() -> None:
    code = (
        "import sys; from malleability_tui.cli.main import app; import engine.experiments.runner;"
        "import engine.data, engine.models, engine.train;"
        "bad=[m for m in sys.modules if m.split('.')[0] in ('textual',)]; print(bad); sys.exit(bool(bad))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_engine_never_imports_ui() -> None:
    code = (
        "import sys, engine, engine.experiments.runner, engine.experiments.registry as r; r.experiments();"
        "import engine.data, engine.models, engine.train;"
        "bad=[m for m in sys.modules if m.split('.')[0] in ('textual','rich','typer','plotext','malleability_tui')];"
        "print(bad); sys.exit(bool(bad))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_single_split_folder_warns_once(shared_data: Path, tmp_path: Path) -> None:
    res = runner.invoke(
        app,
        [
            "headless",
            *TINY,
            "--dataset",
            "mnist",
            "--data-dir",
            str(shared_data / "mnist"),
            "--seeds",
            "0,1",
            "--out",
            str(tmp_path / "r"),
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    assert " ".join(res.output.split()).count("only the test split") == 1
    logs = [json.loads(ln) for ln in (tmp_path / "r" / "events.jsonl").read_text().splitlines()]
    assert [
        e["level"] for e in logs if e["kind"] == "Log" and "only the test split" in e["message"]
    ] == ["warning"]


def test_quick_caps_a_small_binary_task_in_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "q.toml"
    res = _invoke(
        [
            "headless",
            "--dataset",
            "digits",
            "--classes",
            "3,8",
            "--quick",
            "--save-config",
            str(cfg),
        ]
    )
    assert res.exit_code == 0, res.output
    from engine.run.spec import RunSpec

    spec = RunSpec.load(cfg)
    assert (spec.data.n_train, spec.data.n_test) == (228, 77)
    notes = [ln for ln in res.output.splitlines() if ln.startswith("note: --quick:")]
    assert len(notes) == 1 and "n_train 300 → 228" in notes[0]
    # explicit sizes are the user's: no cap, no note
    res = _invoke(["headless", *TINY, "--classes", "3,8", "--save-config", str(cfg)])
    assert res.exit_code == 0 and "note: --quick" not in res.output


def test_until_converged_flag_reaches_the_spec(tmp_path: Path) -> None:
    from engine.run.spec import RunSpec

    cfg = tmp_path / "s.toml"
    res = _invoke(
        ["headless", "--dataset", "digits", "--until-converged", "--save-config", str(cfg)]
    )
    assert res.exit_code == 0, res.output
    assert RunSpec.load(cfg).train.until == "converged"
