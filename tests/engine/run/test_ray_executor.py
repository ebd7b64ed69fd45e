"""The Ray executor on a local Ray with 2 CPUs (one session for the module).

Same rows as in-process (to 1e-5), a killed worker retried, a cell failing on every
attempt recorded as failed (run ``partial``, ``--resume`` reruns it), cancel mid-run
keeps the finished cells and a resume completes them with the same rows.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")

from engine.errors import Cancelled  # noqa: E402
from engine.experiments import run  # noqa: E402
from engine.run.context import (  # noqa: E402
    Resume,
    RunContext,  # noqa: E402
)
from engine.run.events import CellFailed, CellFinished, Event, Finished, TableRow  # noqa: E402
from engine.run.executors import Cell, make_executor, run_cells  # noqa: E402
from engine.run.runs import read_run  # noqa: E402
from engine.run.spec import RunSpec  # noqa: E402
from engine.run.store import RunStore  # noqa: E402

pytestmark = pytest.mark.slow

SWEEP = [
    "--dataset", "digits", "--classes", "3,8", "--n-train", "60", "--n-test", "20",
    "--experiment", "ntk", "--widths", "8,32", "--seeds", "0,1", "--epochs", "4",
    "--device", "cpu", "--quiet",
]  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    """One local Ray with 2 CPUs for every test here; the executor joins it."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # test cells by value
    from engine.run.executors.ray import LOCAL_RAY_CONFIG

    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, _system_config=LOCAL_RAY_CONFIG
    )
    yield
    ray.shutdown()


def _headless(*args: str) -> None:
    from typer.testing import CliRunner

    from malleability_tui.cli.main import app

    res = CliRunner().invoke(app, ["headless", *args])
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def local_rows(tmp_path_factory) -> list[dict[str, str]]:
    out = tmp_path_factory.mktemp("local") / "run"
    _headless(*SWEEP, "--out", str(out))
    return _rows(out)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path / "ntk_distance.csv", newline="") as f:
        return list(csv.DictReader(f))


def _assert_same_rows(a: list[dict[str, str]], b: list[dict[str, str]]) -> None:
    key = ("model", "width", "seed")
    assert sorted(tuple(r[k] for k in key) for r in a) == sorted(
        tuple(r[k] for k in key) for r in b
    )
    by_key = {tuple(r[k] for k in key): r for r in b}
    for r in a:
        s = by_key[tuple(r[k] for k in key)]
        for k, v in r.items():
            if k in key or k == "dataset" or v in ("True", "False"):
                assert v == s[k], k
            else:
                assert float(s[k]) == pytest.approx(float(v), rel=1e-5, abs=1e-8), k


def test_ntk_rows_match_in_process(tmp_path, local_rows) -> None:
    out = tmp_path / "run"
    _headless(*SWEEP, "--out", str(out), "--executor", "ray")
    _assert_same_rows(local_rows, _rows(out))
    assert [r["width"] for r in _rows(out)] == [r["width"] for r in local_rows]  # plan order
    assert read_run(out)["spec"]["executor"]["kind"] == "ray"


def flaky_cell(ctx: RunContext, cell: str, k: int, folder: str, mode: str) -> Iterator[Event]:
    """A cell that records each attempt; ``kill``: its first attempt kills its own worker
    mid-cell; ``raise``: every attempt raises; ``ok``: a plain row."""
    n = len(list(Path(folder).glob(f"{k}-*")))
    Path(folder, f"{k}-{n}").write_text(str(os.getpid()))
    if mode == "kill" and n == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "raise" and not Path(folder, "fixed").exists():
        raise RuntimeError(f"cell {k} is broken")
    yield TableRow("squares", {"k": k, "k2": k * k}, cell=cell)


def _ray_ctx(**kw) -> RunContext:
    spec = RunSpec(device="cpu").replace(executor__kind="ray")
    return RunContext(spec, resume=Resume(**kw), executor=make_executor(spec.executor))


def _plan(folder: Path, modes: list[str]) -> list[Cell]:
    return [
        Cell(f"sq/{k}", flaky_cell, (k, str(folder), m), 0, f"k={k}") for k, m in enumerate(modes)
    ]


def test_killed_worker_is_retried(tmp_path) -> None:
    evs = list(run_cells(_ray_ctx(), _plan(tmp_path, ["ok", "kill", "ok"])))
    rows = [e.row["k"] for e in evs if isinstance(e, TableRow)]
    assert rows == [0, 1, 2]
    pids = [Path(tmp_path, f"1-{i}").read_text() for i in range(2)]
    assert pids[0] != pids[1]  # the second attempt ran in a new worker
    assert not (tmp_path / "1-2").exists()


def test_cell_failing_twice_is_recorded_and_resumed(tmp_path) -> None:
    spec = RunSpec(device="cpu").replace(executor__kind="ray")
    store = RunStore(tmp_path / "run", spec)
    plan = _plan(tmp_path, ["ok", "raise", "ok"])
    for ev in run_cells(_ray_ctx(), plan):
        store.write(ev)
    store.write(Finished({}))
    assert len(list(tmp_path.glob("1-*"))) == 2  # max_retries = 1: two attempts
    assert store.failed_cells == {"sq/1": "RuntimeError: cell 1 is broken"}
    assert read_run(tmp_path / "run")["env"]["status"] == "partial"

    (tmp_path / "fixed").write_text("")
    store = RunStore(tmp_path / "run", spec, resume=True)
    evs = list(run_cells(_ray_ctx(done_cells=frozenset(store.done_cells)), plan))
    for ev in evs:
        store.write(ev)
    store.write(Finished({}))
    assert [e.cell for e in evs if isinstance(e, CellFinished)] == ["sq/1"]  # only the failed one
    assert not any(isinstance(e, CellFailed) for e in evs)
    assert len(list(tmp_path.glob("0-*"))) == 1
    run_ = read_run(tmp_path / "run")
    assert run_["env"]["status"] == "finished"
    assert sorted(int(r["k"]) for r in run_["tables"]["squares"]) == [0, 1, 2]


def test_cancel_mid_run_then_resume(tmp_path, local_rows) -> None:
    from malleability_tui.cli.headless import build_spec

    spec = build_spec(
        dict(dataset="digits", experiment="ntk", classes="3,8", n_train=60, n_test=20,
             widths="8,32", seeds="0,1", epochs=4, device="cpu",
             executor="ray", max_parallel=1),  # one in flight (below)
    )  # fmt: skip
    out = tmp_path / "run"
    store = RunStore(out, spec)
    cancel = threading.Event()
    for ev in run(spec, resume=Resume(cancel=cancel)):
        store.write(ev)
        if isinstance(ev, CellFinished):
            cancel.set()  # the rest are in flight or queued: cancelled
    assert read_run(out)["env"]["status"] == "cancelled"
    kept = set(store.done_cells)
    assert 1 <= len(kept) < 8

    store = RunStore(out, spec, resume=True)
    assert store.done_cells == kept
    previous = {t: [dict(r) for r in rows] for t, rows in store.tables.items()}
    evs = list(run(spec, resume=Resume(done_cells=frozenset(kept), previous_rows=previous)))
    for ev in evs:
        store.write(ev)
    assert not ({e.cell for e in evs if isinstance(e, CellFinished)} & kept)
    assert read_run(out)["env"]["status"] == "finished"
    _assert_same_rows(local_rows, _rows(out))
    assert read_run(out)["summary"]["ntk"]["models"]["2L-ReLU"]["cells"] == 4


def test_cancel_raises_cancelled_from_run_cells(tmp_path) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        list(run_cells(_ray_ctx(cancel=cancel), _plan(tmp_path, ["ok", "ok"])))


def test_influence_check_cells_give_the_same_rows_on_ray() -> None:
    from engine.run.spec import ExecutorSpec, InfluenceCheckSpec

    spec = RunSpec.from_dict(
        {
            "experiment": "influence_check",
            "seeds": [0],
            "device": "cpu",
            "dtype": "float64",
            "data": {"name": "digits", "classes": [3, 8]},
            "model": {"kinds": ["relu", "attn"]},
            "train": {"epochs": 3, "batch_size": 10},
        }
    ).replace(influence_check=InfluenceCheckSpec(n_train=30, n_test=10, width=8, top=2, random=2))

    def rows(s: RunSpec) -> dict[tuple[str, str, str], float]:
        evs = list(run(s))
        assert isinstance(evs[-1], Finished), evs[-1]
        return {
            (e.row["model"], e.row["estimator"], e.row["ridge"]): e.row["spearman"]
            for e in evs
            if isinstance(e, TableRow) and e.table == "influence_check"
        }

    local = rows(spec)
    remote = rows(spec.replace(executor=ExecutorSpec(kind="ray")))
    assert local.keys() == remote.keys() and len(local) >= 8
    for k, v in local.items():
        assert remote[k] == pytest.approx(v, abs=1e-9, nan_ok=True), k


CELLS_SPEC = {
    "experiment": "flip,advtrain,landscape",
    "seeds": [0, 1],
    "device": "cpu",
    "dtype": "float64",
    "data": {"name": "digits", "classes": [3, 8], "n_train": 40, "n_test": 16},
    "model": {"widths": [8]},
    "train": {"epochs": 3, "batch_size": 20},
    "flip": {"attacks": ["fgsm", "pgd"], "width": 8, "pgd_steps": 2},
    "landscape": {
        "width": 8,
        "points_1d": 5,
        "points_2d": 3,
        "hessian_iters": 5,
        "hutchinson_samples": 3,
    },
}


def _plain(v):
    """Arrays to lists, so events compare as JSON-like values."""
    return v.tolist() if hasattr(v, "tolist") else v


def _assert_close(a, b, where: str = "") -> None:
    """``a`` and ``b`` equal, floats to 1e-5 (NaN equal to NaN), recursively."""
    a, b = _plain(a), _plain(b)
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for k in a:
            _assert_close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool):
        assert b == pytest.approx(a, rel=1e-5, abs=1e-8, nan_ok=True), where
    else:
        assert a == b, where


def _record(spec: RunSpec) -> dict[str, list]:
    """Rows (with their cells), artifacts, finished cells and summary of ``run(spec)``."""
    from engine.run.events import Artifact

    out: dict[str, list] = {"rows": [], "artifacts": [], "cells": [], "summary": []}
    for ev in run(spec):
        if isinstance(ev, TableRow):
            out["rows"].append((ev.table, ev.cell, ev.row))
        elif isinstance(ev, Artifact):
            out["artifacts"].append((ev.name, ev.cell, ev.data))
        elif isinstance(ev, CellFinished):
            out["cells"].append(ev.cell)
        elif isinstance(ev, Finished):
            out["summary"].append(ev.summary)
    assert out["summary"], "the run did not finish"
    return out


@pytest.fixture(scope="module")
def cells_local() -> dict[str, list]:
    return _record(RunSpec.from_dict(CELLS_SPEC))


def test_flip_advtrain_landscape_match_in_process(cells_local) -> None:
    """Rows (in plan order), artifacts, resume markers and summary of flip, advtrain and
    landscape cells on Ray are the in-process ones."""
    remote = _record(RunSpec.from_dict(CELLS_SPEC).replace(executor__kind="ray"))
    tables = {t for t, _, _ in cells_local["rows"]}
    assert {"flip_rates", "landscape", "sharpness"} <= tables
    assert {r["training"] for t, _, r in cells_local["rows"] if t == "flip_rates"} == {
        "standard",
        "adversarial",
    }
    assert remote["cells"] == cells_local["cells"]
    assert "flip/digits/attn/pgd/0.3/1" in remote["cells"]  # a marker per (attack, ε)
    _assert_close(cells_local["rows"], remote["rows"], "rows")
    _assert_close(cells_local["artifacts"], remote["artifacts"], "artifacts")
    _assert_close(cells_local["summary"], remote["summary"], "summary")


def test_flip_landscape_cancel_then_resume_on_ray(tmp_path, cells_local) -> None:
    """Cancelled after the first cell, then resumed: only the missing cells run again,
    and rows and summary are those of the uninterrupted in-process run."""
    from engine.experiments.runner import execute

    # one cell at a time: the cancel meets a cell that has just started, never one whose
    # result is on its way (that race can abort the driver in Ray: executors/ray_executor.py)
    spec = RunSpec.from_dict(CELLS_SPEC).replace(executor__kind="ray", executor__max_parallel=1)
    out = tmp_path / "run"
    cancel = threading.Event()

    def stop_after_a_cell(ev: Event) -> None:
        if isinstance(ev, CellFinished) and ev.cell.count("/") == 3:  # a whole (kind, seed)
            cancel.set()

    execute(spec, out, cancel=cancel, on_event=stop_after_a_cell)
    assert read_run(out)["env"]["status"] == "cancelled"
    store = RunStore(out, spec, resume=True)
    kept = set(store.done_cells)
    assert "flip/digits/relu/0" in kept and "landscape/digits/relu/8/0" not in kept

    seen: list[str] = []
    execute(
        spec,
        out,
        store=store,
        on_event=lambda ev: seen.append(ev.cell) if isinstance(ev, CellFinished) else None,
    )
    run_ = read_run(out)
    assert run_["env"]["status"] == "finished"
    assert not set(seen) & kept
    assert sorted(seen + sorted(kept)) == sorted(cells_local["cells"])
    local_rows = [r for t, _, r in cells_local["rows"] if t == "flip_rates"]
    key = ("model", "training", "attack", "eps", "seed")
    got = {tuple(str(r[k]) for k in key): r for r in run_["tables"]["flip_rates"]}
    assert len(got) == len(local_rows)
    for r in local_rows:
        assert float(got[tuple(str(r[k]) for k in key)]["flip_rate"]) == pytest.approx(
            r["flip_rate"]
        )
    summary = cells_local["summary"][0]
    for section in ("flip", "advtrain", "landscape"):
        _assert_close(json.loads(json.dumps(summary[section])), run_["summary"][section], section)
