"""``train.until = "converged"`` also stops a cell stuck at its start (``engine.train.until.stuck``):
the guard says it never left its initial loss and the loss shows no trend beyond the noise bound."""

from __future__ import annotations

import random

import pytest
import torch

from engine.results import constant_loss, convergence
from engine.results.guards import failed_cells, guard_note
from engine.run.context import RunContext
from engine.run.spec import RunSpec, TrainSpec
from engine.train.until import CAP, CONVERGED, STUCK, stop_now, stop_reason, stuck

CFG = TrainSpec(epochs=100, until="converged", max_epochs=1000, check_every=10)
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
