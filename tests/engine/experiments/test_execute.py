"""``engine.experiments.execute``: the one run loop of the CLI and the TUI runners."""

from __future__ import annotations

import json

import pytest

from engine.experiments import execute
from engine.run.events import CellFinished, Finished, Started, TableRow
from engine.run.spec import RunSpec

SPEC = RunSpec(experiment="train", seeds=(0,), device="cpu").replace(
    data__n_train=40, data__n_test=20, model__widths=(4,), train__epochs=2
)


def _row(width: int) -> dict:
    return {
        "model": "2L-ReLU",
        "dataset": "digits",
        "width": width,
        "seed": 0,
        "training": "standard",
        "epochs": 2,
        "train_loss": 0.5,
        "train_accuracy": 0.5,
        "test_loss": 0.5,
        "test_accuracy": 0.5,
        "seconds": 0.1,
        "converged": True,
        "above_chance": True,
        "epochs_run": 2,
        "stuck": False,
    }


def _status(run) -> str:
    return json.loads((run / "env.json").read_text())["status"]


def test_real_run_finishes_and_reports_each_event(tmp_path):
    seen = []
    store = execute(SPEC, tmp_path / "run", on_event=seen.append)
    assert isinstance(seen[0], Started) and isinstance(seen[-1], Finished)
    assert _status(tmp_path / "run") == "finished" and len(store.tables["train"]) == 2


def test_resume_skips_done_cells_and_passes_their_rows(tmp_path):
    def first(spec, **kw):
        yield Started(spec.experiment, spec.to_dict())
        yield TableRow("train", _row(4), cell="a")
        yield CellFinished("a")  # then the stream stops short: a killed run

    run = tmp_path / "run"
    execute(SPEC, run, source=first)
    assert _status(run) == "interrupted"
    got = {}

    def second(spec, *, resume):
        got.update(done=resume.done_cells, rows=resume.previous_rows)
        yield TableRow("train", _row(8), cell="b")
        yield CellFinished("b")
        yield Finished({})

    store = execute(SPEC, run, resume=True, source=second)
    assert got["done"] == {"a"} and [r["width"] for r in got["rows"]["train"]] == [4]
    assert _status(run) == "finished" and [r["width"] for r in store.tables["train"]] == [4, 8]


def test_a_raising_source_fails_the_run_and_raises(tmp_path):
    def boom(spec, **kw):
        yield Started(spec.experiment, spec.to_dict())
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError, match="bug"):
        execute(SPEC, tmp_path / "run", source=boom)
    assert _status(tmp_path / "run") == "failed"
    # the lock was released: the run can be continued
    execute(SPEC, tmp_path / "run", resume=True, source=lambda spec, **kw: iter([Finished({})]))
    assert _status(tmp_path / "run") == "finished"
