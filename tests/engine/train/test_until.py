"""``train.until = "converged"``: a cell stops where the guard first holds, as a fixed run."""

from __future__ import annotations

import math

import pytest
import torch

from engine.errors import ConfigError
from engine.results import constant_loss, converged
from engine.run.context import RunContext
from engine.run.events import Progress
from engine.run.spec import RunSpec, TrainSpec
from engine.train.until import epoch_cap, is_check, stop_now

BASE = RunSpec(experiment="train", seeds=(0,), device="cpu", dtype="float64").replace(
    data__classes=(3, 8), data__n_train=60, data__n_test=30, train__batch_size=16
)


def _drain(gen):  # type: ignore[no-untyped-def]
    events = []
    while True:
        try:
            events.append(next(gen))
        except StopIteration as stop:
            return stop.value, events


def test_checks_start_at_epochs_then_every_check_every() -> None:
    cfg = TrainSpec(epochs=20, until="converged", max_epochs=100, check_every=15)
    assert [e for e in range(1, 101) if is_check(cfg, e)] == [20, 35, 50, 65, 80, 95]
    assert epoch_cap(cfg) == 100 and epoch_cap(TrainSpec(epochs=20)) == 20


def test_stop_now_is_the_guard_at_checks_and_the_cap() -> None:
    cfg = TrainSpec(epochs=10, until="converged", max_epochs=60, check_every=5)
    decay = [1.0 + math.exp(-e / 3.0) for e in range(60)]  # settles by ~epoch 20
    flat = [1.0] * 60  # never leaves its start
    got = [e for e in range(1, 61) if stop_now(cfg, decay[:e], None)]
    want = [e for e in range(10, 61, 5) if converged(decay[:e])]
    assert got[0] == want[0] and 10 < got[0] < 60
    assert [e for e in range(1, 61) if stop_now(cfg, flat[:e], None)] == [60]  # the cap only
    fixed = TrainSpec(epochs=10)
    assert next(e for e in range(1, 30) if stop_now(fixed, decay[:e], None)) == 10


def test_spec_validates_and_round_trips() -> None:
    with pytest.raises(ConfigError, match="train.until"):
        TrainSpec(until="forever")
    with pytest.raises(ConfigError, match="train.max_epochs"):
        TrainSpec(max_epochs=0)
    assert epoch_cap(TrainSpec(epochs=500, until="converged", max_epochs=100)) == 500
    with pytest.raises(ConfigError, match="train.check_every"):
        TrainSpec(check_every=0)
    TrainSpec(epochs=500, max_epochs=100)  # the cap only binds when until = converged
    s = BASE.replace(train__until="converged", train__max_epochs=800, train__check_every=7)
    assert RunSpec.from_toml(s.to_toml()) == s


def test_a_cell_stops_where_the_guard_first_holds_with_a_fixed_runs_weights() -> None:
    spec = BASE.replace(
        train__epochs=20, train__until="converged", train__max_epochs=600, train__check_every=10
    )
    tm, events = _drain(RunContext(spec).train_model("relu", 32, 0))
    e = tm.epochs_run
    assert tm.converged and 20 <= e < 600 and (e - 20) % 10 == 0
    losses = [h["loss"] for h in tm.history]
    base = constant_loss(tm.dataset.y_train)
    assert not any(converged(losses[:k], baseline=base) for k in range(20, e, 10))
    assert [ev.total for ev in events if isinstance(ev, Progress)][0] == 600  # the cap
    fixed, _ = _drain(
        RunContext(spec.replace(train__until="fixed", train__epochs=e)).train_model("relu", 32, 0)
    )
    assert [h["loss"] for h in fixed.history] == losses
    for k, v in tm.model.state_dict().items():
        assert torch.equal(v, fixed.model.state_dict()[k]), k
    assert fixed.train_loss == tm.train_loss


def test_a_cell_that_never_converges_stops_at_the_cap_and_its_twin_runs_its_epochs() -> None:
    spec = BASE.replace(
        model__sigma_w=0.01,
        train__lr=1e-7,  # barely moves: never leaves its start
        train__epochs=8,
        train__until="converged",
        train__max_epochs=12,
        train__check_every=2,
    )
    ctx = RunContext(spec)
    tm, _ = _drain(ctx.train_model("relu", 8, 0))
    assert tm.epochs_run == 12 and not tm.converged
    _, events = _drain(ctx.train_linearized(tm))
    assert [ev.done for ev in events if isinstance(ev, Progress)][-1] == 12
    assert tm.replay(spec.train) == TrainSpec(
        lr=1e-7, epochs=12, batch_size=16, max_epochs=12, check_every=2
    )


@pytest.mark.parametrize("where", ["between cells", "mid-cell"])
def test_a_resumed_until_converged_run_gives_the_same_rows(tmp_path, where) -> None:
    """Killed after the first cell, or in the middle of the second cell's chunked training
    (past its first guard check): the resumed run's rows equal an uninterrupted run's."""
    from engine.experiments import execute, run
    from engine.run.events import CellFinished

    spec = BASE.replace(
        model__widths=(8, 32),
        model__kinds=("relu",),
        train__epochs=20,
        train__until="converged",
        train__max_epochs=200,
    )

    def killed(sp, **kw):  # type: ignore[no-untyped-def]
        cells = 0
        for ev in run(sp, **kw):
            yield ev
            cells += isinstance(ev, CellFinished)
            if where == "between cells" and cells == 1:
                return  # the stream stops short after the first cell: a killed run
            mid = isinstance(ev, Progress) and ev.task == "cell" and ev.done > 30
            if where == "mid-cell" and cells == 1 and mid:
                return  # killed while the second cell trains past its first check

    def rows(store):  # type: ignore[no-untyped-def]
        return [{k: v for k, v in r.items() if k != "seconds"} for r in store.tables["train"]]

    whole = execute(spec, tmp_path / "whole")
    assert len(execute(spec, tmp_path / "part", source=killed).tables["train"]) == 1
    resumed = execute(spec, tmp_path / "part", resume=True)
    assert len(rows(whole)) == 2 and all(r["epochs_run"] >= 20 for r in rows(whole))
    assert sorted(map(str, rows(resumed))) == sorted(map(str, rows(whole)))
