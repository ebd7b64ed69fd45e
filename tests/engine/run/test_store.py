"""The run store writes a complete run directory and resumes without duplicates."""

from __future__ import annotations

import csv
import json

import pytest

from engine.errors import ConfigError
from engine.run.events import (
    CellFinished,
    Failed,
    Finished,
    Metric,
    Started,
    Summary,
    TableRow,
    from_json,
)
from engine.run.runs import read_run
from engine.run.spec import RunSpec
from engine.run.store import RunStore

ROW = {
    "model": "2L-ReLU",
    "dataset": "digits",
    "width": 16,
    "seed": 0,
    "training": "standard",
    "epochs": 2,
    "train_loss": 0.5,
    "train_accuracy": 0.9,
    "test_loss": 0.6,
    "test_accuracy": 0.8,
    "seconds": 0.1,
    "converged": True,
    "above_chance": False,
    "epochs_run": 2,
    "stuck": False,
}


def _rows(path) -> list[dict]:
    with open(path / "train.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_directory_contents_and_atomic_tables(tmp_path) -> None:
    spec = RunSpec(experiment="train")
    st = RunStore(tmp_path / "run", spec)
    st.write(Started("train", spec.to_dict()))
    st.write(TableRow("train", ROW, cell="c1"))
    assert not (tmp_path / "run" / "train.csv").exists()  # rows land when their cell finishes
    st.write(CellFinished("c1"))
    assert _rows(tmp_path / "run")[0]["width"] == "16"
    assert (
        _rows(tmp_path / "run")[0]["converged"],
        _rows(tmp_path / "run")[0]["above_chance"],
    ) == ("True", "False")
    st.write(Metric("train_loss", float("nan"), 1, cell="c1"))
    st.write(Summary("train", {"headline": "ok", "x": float("inf")}))
    st.write(Finished({"train": {"headline": "ok"}}))
    d = read_run(tmp_path / "run")
    assert d["env"]["status"] == "finished" and "end_time" in d["env"]
    assert d["summary"]["train"]["headline"] == "ok"
    assert RunSpec.from_dict(d["spec"]) == spec
    lines = (tmp_path / "run" / "events.jsonl").read_text().splitlines()
    evs = [from_json(json.loads(ln)) for ln in lines]
    assert [e.kind for e in evs][:2] == ["Started", "TableRow"]
    assert not list((tmp_path / "run").glob(".*.tmp"))


def test_wrong_columns_rejected(tmp_path) -> None:
    st = RunStore(tmp_path / "run", RunSpec())
    bad = dict(ROW)
    del bad["seed"]
    with pytest.raises(ConfigError, match="seed"):
        st.write(TableRow("train", bad, cell="c"))


def test_refuses_nonempty_dir_without_resume(tmp_path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "x").write_text("keep me")
    with pytest.raises(ConfigError, match="--resume"):
        RunStore(tmp_path / "run", RunSpec())
    assert (tmp_path / "run" / "x").read_text() == "keep me"


def test_resume_keeps_finished_drops_partial(tmp_path) -> None:
    spec = RunSpec()
    st = RunStore(tmp_path / "run", spec)
    st.write(TableRow("train", ROW, cell="done"))
    st.write(CellFinished("done"))
    st.write(TableRow("train", {**ROW, "width": 64}, cell="partial"))
    st.close("interrupted")
    st2 = RunStore(tmp_path / "run", spec, resume=True)
    assert st2.done_cells == {"done"}
    assert [r["width"] for r in _rows(tmp_path / "run")] == ["16"]
    st2.write(TableRow("train", {**ROW, "width": 64}, cell="partial"))
    st2.write(CellFinished("partial"))
    st2.write(Failed("Cancelled", "stop"))
    assert [r["width"] for r in _rows(tmp_path / "run")] == ["16", "64"]
    assert read_run(tmp_path / "run")["env"]["status"] == "cancelled"
    st3 = RunStore(tmp_path / "run", spec, resume=True)
    assert st3.done_cells == {"done", "partial"}
    assert len(_rows(tmp_path / "run")) == 2


def test_guard_columns_are_booleans_and_optional_on_read(tmp_path) -> None:
    """A run written before the guard columns existed reads fine (guards unknown); a guard
    cell that is not True/False is named as damage."""
    from engine.results import failed_cells
    from engine.results.tables import TrainRow
    from engine.run.store import TABLE_COLUMNS
    from engine.run.validate import DamagedRun, read_csv_table

    cols = TABLE_COLUMNS["train"]
    old = [c for c in cols if c not in ("converged", "above_chance")]
    p = tmp_path / "train.csv"
    p.write_text(",".join(old) + "\n" + ",".join(str(ROW[c]) for c in old) + "\n")
    rows = read_csv_table(p, TrainRow)
    assert rows[0]["width"] == "16" and failed_cells(rows) == {}
    cells = ["maybe" if c == "above_chance" else str(ROW[c]) for c in cols]
    p.write_text(",".join(cols) + "\n" + ",".join(cells) + "\n")
    with pytest.raises(DamagedRun, match="above_chance='maybe' is not True or False"):
        read_csv_table(p, TrainRow)


def test_the_docs_list_every_table_with_its_columns():
    """docs/architecture.md's run-directory block names every table of the store with its
    columns."""
    from pathlib import Path

    from engine.run.store import TABLE_COLUMNS

    page = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"
    lines = {
        ln.split()[0]: ln.split()[1]
        for ln in page.read_text(encoding="utf-8").splitlines()
        if ln.startswith("<run>/") and ".csv" in ln
    }
    for table, cols in TABLE_COLUMNS.items():
        assert lines.get(f"<run>/{table}.csv") == ",".join(cols), table
