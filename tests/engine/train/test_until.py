"""``train.until = "converged"``: a cell stops where the rule first holds, as a fixed run."""

from __future__ import annotations

import math
import random

import pytest
import torch

from engine.errors import ConfigError
from engine.results import constant_loss, converged, convergence
from engine.results.guards import failed_cells, guard_note
from engine.run.context import RunContext
from engine.run.events import Progress
from engine.run.spec import RunSpec, TrainSpec
from engine.train.until import (
    CAP,
    CONVERGED,
    STUCK,
    epoch_cap,
    is_check,
    may_stop,
    stop_now,
    stop_reason,
    stuck,
)

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


def test_stop_now_is_the_rule_at_checks_and_the_cap() -> None:
    cfg = TrainSpec(epochs=10, until="converged", max_epochs=60, check_every=5)
    decay = [1.0 + math.exp(-e / 3.0) for e in range(60)]  # settles by ~epoch 20
    flat = [1.0] * 60  # never leaves its start, no trend: stuck (the stuck tests below)
    crawl = [1.0 - 1e-4 * e for e in range(60)]  # never leaves its start, but a trend
    got = [e for e in range(1, 61) if stop_now(cfg, decay[:e], None)]
    want = [e for e in range(10, 61, 5) if may_stop(decay[:e], None)]
    assert got[0] == want[0] and 10 < got[0] < 60
    assert converged(decay[: got[0]])  # a stopped cell passes the guard its table reports
    assert [e for e in range(1, 61) if stop_now(cfg, crawl[:e], None)] == [60]  # the cap only
    assert next(e for e in range(1, 61) if stop_now(cfg, flat[:e], None)) == 10
    fixed = TrainSpec(epochs=10)
    assert next(e for e in range(1, 30) if stop_now(fixed, decay[:e], None)) == 10


def _first(rule, losses, start=100):  # type: ignore[no-untyped-def]
    """The first check (``start``, then every 10 epochs) where ``rule`` holds; None."""
    return next((e for e in range(start, len(losses) + 1, 10) if rule(losses[:e])), None)


def _gap(losses: list[float], e: int) -> float:
    """The share of the decrease to the last epochs that stopping at ``e`` leaves unmade."""

    def last(v: list[float]) -> float:
        w = math.ceil(0.1 * len(v))
        return sum(v[-w:]) / w

    return (last(losses[:e]) - last(losses)) / (losses[0] - last(losses))


def _crawl(seed: int) -> list[float]:
    """1000 epochs of a slow crawl under batch noise, shaped as measured for uncentred
    MLP-Attn on MNIST 3 vs 8 (bench_until_rules.py: 1.0 at the start, ≈ 0.55 at epoch
    100, ≈ 0.49 at the cap; epoch-to-epoch noise 0.005)."""
    r = random.Random(seed)
    return [0.48 + 0.52 / (1 + t / 5) ** 0.74 + r.gauss(0, 0.005) for t in range(1000)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_slow_crawl_is_not_stopped_at_a_noisy_early_check(seed: int) -> None:
    """The guard alone holds at the first check (epoch 100-110), 8-9 % of the decrease
    short of the cap; the rule waits until at most 4 % is left."""
    crawl = _crawl(seed)
    once = _first(lambda v: converged(v, baseline=1.0), crawl)
    assert once is not None and once <= 110 and _gap(crawl, once) > 0.08
    stop = _first(lambda v: may_stop(v, 1.0), crawl)
    assert stop is not None and stop >= 250 and _gap(crawl, stop) < 0.04


@pytest.mark.parametrize("tau", [2.0, 5.0, 10.0, 20.0, 50.0, 100.0])
def test_a_clean_approach_costs_at_most_half_again_the_guards_epochs(tau: float) -> None:
    """An exponential approach with batch noise: the guard alone holds at ≈ 4.2 τ, the rule
    at ≈ 6.2 τ; from a first check at 100 a cell settled by then (τ ≤ 10) costs nothing."""
    r = random.Random(0)
    clean = [0.1 + 0.9 * math.exp(-t / tau) + r.gauss(0, 0.002) for t in range(2000)]
    for start in (10, 100):
        once = _first(lambda v: converged(v, baseline=1.0), clean, start)
        stop = _first(lambda v: may_stop(v, 1.0), clean, start)
        assert once is not None and stop is not None and once <= stop <= 1.5 * once
        assert stop == once or tau > 10 or start < 100
        assert _gap(clean, stop) < 0.01


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


def test_a_cell_stops_where_the_rule_first_holds_with_a_fixed_runs_weights() -> None:
    spec = BASE.replace(
        train__epochs=20, train__until="converged", train__max_epochs=600, train__check_every=10
    )
    tm, events = _drain(RunContext(spec).train_model("relu", 32, 0))
    e = tm.epochs_run
    assert tm.converged and 20 <= e < 600 and (e - 20) % 10 == 0
    losses = [h["loss"] for h in tm.history]
    base = constant_loss(tm.dataset.y_train)
    assert may_stop(losses, base) and not any(may_stop(losses[:k], base) for k in range(20, e, 10))
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


# A cell stuck at its start (``engine.train.until.stuck``): the guard says it never left its
# initial loss and the loss shows no trend beyond the noise bound.

CFG = TrainSpec(epochs=100, until="converged", max_epochs=1000, check_every=10)


def _first_stop(losses: list[float], base: float | None) -> int:
    return next(e for e in range(1, len(losses) + 1) if stop_now(CFG, losses[:e], base))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_stuck_history_stops_at_the_first_check(seed: int) -> None:
    """At the zero predictor's loss (ln 10) with batch noise, as the adversarial cells of
    bench_until_rules.py: stopped as stuck at epoch ``epochs``, not at the cap."""
    r = random.Random(seed)
    flat = [2.3046 + 0.02 * 0.9**t + r.gauss(0, 0.002) for t in range(1000)]
    base = 2.302585
    assert convergence(flat, baseline=base).reason == "never left its initial loss"
    assert _first_stop(flat, base) == 100
    assert stop_reason(CFG, flat[:100], base) == STUCK
    # without the stuck rule it ran to the cap: the guard never holds
    assert not any(convergence(flat[:e], baseline=base).converged for e in range(100, 1001, 10))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_slow_consistent_crawl_from_its_start_is_not_stuck(seed: int) -> None:
    """Down 0.8 % in the first 100 epochs (the guard: never left its start) but steadily,
    as uncentred MNIST MLP-Attn at lr 3e-6 (bench_until_rules.py): it trains on and
    leaves its start later."""
    r = random.Random(seed)
    crawl = [1.0 - 8e-5 * t + r.gauss(0, 0.0005) for t in range(1000)]
    assert convergence(crawl[:100], baseline=1.0).reason == "never left its initial loss"
    assert not any(stuck(crawl[:e], 1.0) for e in range(100, 1001, 10))
    assert _first_stop(crawl, 1.0) == 1000 and stop_reason(CFG, crawl, 1.0) == CAP
    assert convergence(crawl, baseline=1.0).reason != "never left its initial loss"


def test_a_settled_cell_stops_as_converged_and_fixed_runs_never_as_stuck() -> None:
    flat = [1.0] * 200
    assert stop_reason(CFG, flat[:100], None) == STUCK
    decay = [0.5 + 0.5 * 0.9**t for t in range(200)]
    assert stop_reason(CFG, decay[:100], None) == CONVERGED
    fixed = TrainSpec(epochs=100)
    assert [stop_reason(fixed, flat[:e], None) for e in (99, 100)] == ["", CAP]


STUCK_SPEC = BASE.replace(
    flip__adv_eps=1.0,  # PGD within ε = 1 reaches any image: the net cannot leave its start
    flip__adv_steps=3,
    flip__width=8,
    flip__attacks=("fgsm",),
    flip__eps=(0.1,),
    model__kinds=("relu",),
    train__epochs=8,
    train__until="converged",
    train__max_epochs=40,
    train__check_every=4,
)


@pytest.mark.parametrize("engine", ["fused", "autograd"])
def test_a_cell_that_cannot_leave_its_start_stops_stuck_with_a_fixed_runs_weights(
    engine: str,
) -> None:
    """Adversarial training at ε = 1: the loss cannot leave its start; both trainers stop
    it at the first check (epoch 8 of a cap of 40), not converged and stuck, with the
    weights of a fixed 8-epoch run."""
    spec = STUCK_SPEC.replace(train__engine=engine)
    tm, _ = _drain(RunContext(spec).train_model("relu", 8, 0, adversarial=True))
    assert tm.epochs_run == 8 and tm.stopped == STUCK
    assert tm.guards() == {"converged": False, "above_chance": tm.above_chance, "stuck": True}
    losses = [h["loss"] for h in tm.history]
    reason = convergence(losses, baseline=constant_loss(tm.dataset.y_train)).reason
    assert reason == "never left its initial loss"
    fixed_spec = spec.replace(train__until="fixed")
    fixed, _ = _drain(RunContext(fixed_spec).train_model("relu", 8, 0, adversarial=True))
    assert fixed.stopped == CAP and not fixed.guards()["stuck"]
    assert [h["loss"] for h in fixed.history] == losses
    for k, v in tm.model.state_dict().items():
        assert torch.equal(v, fixed.model.state_dict()[k]), k


def test_the_row_and_headline_say_the_cell_was_stopped_stuck(tmp_path) -> None:
    """The advtrain rows of a stuck cell: converged False, stuck True; the summary's
    headline names the cell as stuck at its start."""
    from engine.experiments import execute

    store = execute(STUCK_SPEC.replace(experiment="advtrain"), tmp_path / "run")
    rows = [r for r in store.tables["flip_rates"] if r["training"] == "adversarial"]
    assert rows and all(r["converged"] is False and r["stuck"] is True for r in rows)
    head = store.summary["advtrain"]["headline"]
    assert any("not converged in 1 of 1 cell (seed=0 stuck at start)" in h for h in head), head
    # a cell that is not converged but was not stopped stuck is named as before
    plain = failed_cells([{**rows[0], "stuck": False}])
    note = guard_note(plain, rows[0]["model"], 1)
    assert note.startswith("not converged in 1 of 1 cell (seed=0);")
