"""--track mlflow / export --to mlflow: a run's params, metrics, artifacts and tags read
back with the MlflowClient from real local stores: SQLite and a file: folder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from own_sources import write_all
from typer.testing import CliRunner

from engine.errors import ConfigError
from engine.tracking import make_tracker
from malleability_tui.cli.main import app

mlflow = pytest.importorskip("mlflow", reason="needs MLflow (the [mlflow] extra)")

runner = CliRunner()


STORES = {
    "sqlite": lambda root: f"sqlite:///{root / 'mlflow.db'}",  # what MLflow 3 recommends
    "file": lambda root: f"file:{root / 'mlruns'}",  # needs MLFLOW_ALLOW_FILE_STORE (set for it)
}


@pytest.fixture(scope="module", autouse=True)
def artifacts_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A database store keeps artifacts in ./mlruns of the working directory (MLflow's
    default artifact root): here a temporary folder, not the repository."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        yield


@pytest.fixture(scope="module", params=sorted(STORES))
def tracked(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    """One quick train run on a folder: source, tracked into a real local store of each kind
    (a SQLite database and a file: folder)."""
    root = tmp_path_factory.mktemp(f"trk-{request.param}")
    name = write_all(root, per_class=20)["folder"]
    uri = STORES[request.param](root)
    out = root / "run"
    res = runner.invoke(
        app,
        ["headless", "--dataset", name, "-e", "train", "--quick", "--epochs", "4",
         "--widths", "8,16", "--n-train", "30", "--n-test", "12", "--out", str(out),
         "--track", "mlflow", "--tracking-uri", uri, "-q"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    return out, uri


def test_params_metrics_artifacts_tags(tracked: tuple[Path, str]) -> None:
    out, uri = tracked
    info = json.loads((out / "summary.json").read_text())["mlflow"]
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    run = client.get_run(info["run_id"])
    p = run.data.params
    assert p["data.name"].startswith("folder:") and p["model.widths"] == "8,16"
    assert p["train.epochs"] == "4" and p["data.n_train"] == "30"
    losses = [k for k in run.data.metrics if k.startswith("train_loss/")]
    assert len(losses) == 4  # 2 models × 2 widths, one series each
    hist = client.get_metric_history(info["run_id"], losses[0])
    steps = sorted(m.step for m in hist)  # --quick trains until converged: 4 epochs or more
    assert len(steps) >= 4 and steps == list(range(1, len(steps) + 1))
    events = [json.loads(ln) for ln in (out / "events.jsonl").read_text().splitlines()]
    first = next(e for e in events if e["kind"] == "Metric" and e["name"] == "train_loss")
    values = [m.value for k in losses for m in client.get_metric_history(info["run_id"], k)]
    assert first["value"] in values  # the events' own numbers, not a recomputation
    arts = {a.path for a in client.list_artifacts(info["run_id"])}
    assert {"train.csv", "summary.json", "spec.toml", "env.json"} <= arts
    tags = run.data.tags
    assert tags["status"] == "finished" and tags["experiment"] == "train"
    import csv

    rows = list(csv.DictReader((out / "train.csv").open()))
    failed = any("False" in (r["converged"], r["above_chance"]) for r in rows)
    assert any(k.startswith("guard/train/") for k in tags) == failed  # a tag per failed guard
    assert run.info.status == "FINISHED"


def test_export_to_mlflow_logs_a_second_run(tracked: tuple[Path, str]) -> None:
    out, uri = tracked
    before = json.loads((out / "summary.json").read_text())["mlflow"]["run_id"]
    res = runner.invoke(app, ["export", str(out), "--to", "mlflow", "--tracking-uri", uri])
    assert res.exit_code == 0, res.output
    after = json.loads((out / "summary.json").read_text())["mlflow"]["run_id"]
    assert after != before
    run = mlflow.tracking.MlflowClient(tracking_uri=uri).get_run(after)
    assert run.data.params["experiment"] == "train"


def test_a_reproduce_folder_is_a_parent_with_nested_parts(
    tracked: tuple[Path, str], tmp_path: Path
) -> None:
    import shutil

    out, uri = tracked
    repro = tmp_path / "repro"
    shutil.copytree(out, repro / "digits-train")
    (repro / "digits-train" / "summary.json").write_text(json.dumps({"status": "finished"}))
    (repro / "reproduce.json").write_text(
        json.dumps({"tables": [1], "quick": True, "parts": [{"key": "digits-train"}]})
    )
    summary = {
        "status": "finished",
        "experiment": "reproduce",
        "checklist": [{"claim": 1, "dataset": "digits", "verdict": "inconclusive"}],
    }
    (repro / "summary.json").write_text(json.dumps(summary))
    tracker = make_tracker("mlflow", uri)
    assert tracker is not None
    parent = tracker.log_run(repro)
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    run = client.get_run(parent)
    assert run.data.tags["claim/1/digits"] == "inconclusive" and run.data.params["quick"] == "True"
    assert "reproduce.json" in {a.path for a in client.list_artifacts(parent)}
    children = client.search_runs(
        [run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent}'"
    )
    assert [c.data.tags["mlflow.runName"] for c in children] == ["digits-train"]
    assert children[0].data.params["experiment"] == "train"


def test_checklist_verdicts_and_guards_become_tags() -> None:
    from engine.tracking.mlflow import _tags, flatten

    tags = _tags(
        {
            "status": "finished",
            "ntk": {"failed_guards": {"at chance": {"MLP-Attn": ["m=16 seed=0"]}}},
            "checklist": [{"claim": 2, "dataset": "mnist", "verdict": "holds"}],
        }
    )
    assert tags["claim/2/mnist"] == "holds"
    assert json.loads(tags["guard/ntk/at chance"]) == {"MLP-Attn": ["m=16 seed=0"]}
    assert flatten({"a": {"b": [1, 2]}, "c": 3}) == {"a.b": "1,2", "c": 3}


def test_unknown_tracker_and_bad_uri_are_one_line() -> None:
    with pytest.raises(ConfigError, match="one of mlflow"):
        make_tracker("wandb")
    with pytest.raises(ConfigError, match="only with --track"):
        make_tracker(None, "file:/x")
    res = runner.invoke(app, ["headless", "-d", "digits", "--track", "nope", "-q"])
    assert res.exit_code != 0 and "one of mlflow" in res.output and "Traceback" not in res.output
