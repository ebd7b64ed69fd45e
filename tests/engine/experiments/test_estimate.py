"""The run-time estimate (engine/experiments/estimate.py): FLOP counts of a spec's plan."""

from __future__ import annotations

from typer.testing import CliRunner

from engine.experiments.estimate import (
    CONFIRM_SECONDS,
    OVERHEAD,
    PER_RUN_SECONDS,
    estimate_seconds,
    hms,
    planned_flops,
)
from engine.experiments.presets import apply_quick
from engine.experiments.spec import RunSpec

RATE = 2e10  # FLOP/s of a small CPU core pair; fixed so the tests do not time anything


def test_train_flops_are_the_formula():
    spec = RunSpec(experiment="train", seeds=(0, 1)).replace(
        data__n_train=100, model__widths=(16, 64), train__epochs=3
    )
    d = 64  # digits: 8×8
    assert planned_flops(spec) == 6.0 * 100 * d * (16 + 64) * 3 * 2 * 2
    # ntk trains the same cells (once for both)
    assert planned_flops(spec.replace(experiment="train,ntk")) == planned_flops(spec)


def test_all_resolves_every_experiment_and_adds_work():
    spec = RunSpec(experiment="train")
    everything = spec.replace(experiment="all")
    assert planned_flops(everything) > planned_flops(spec) > 0
    assert planned_flops(spec.replace(experiment="flip")) > 0
    assert planned_flops(spec.replace(experiment="landscape")) > 0


def test_paper_spec_asks_to_confirm_and_quick_does_not():
    paper = RunSpec(experiment="all").replace(data__name="mnist")
    quick = apply_quick(RunSpec(experiment="all"))
    assert estimate_seconds([paper], flops_per_s=RATE) > CONFIRM_SECONDS
    assert estimate_seconds([quick], flops_per_s=RATE) < CONFIRM_SECONDS
    two = estimate_seconds([quick, quick], flops_per_s=RATE)
    assert two == OVERHEAD * 2 * planned_flops(quick) / RATE + 2 * PER_RUN_SECONDS


def test_hms():
    assert hms(65) == "1m05s" and hms(3725) == "1h02m" and hms(0.4) == "0m00s"


def test_reproduce_dry_run_prints_the_estimate(tmp_path):
    from malleability_tui.cli.main import app

    res = CliRunner().invoke(
        app,
        ["reproduce", "--dataset", "digits", "--quick", "--dry-run", "--out", str(tmp_path / "r")],
    )
    assert res.exit_code == 0, res.output
    assert "estimated run time ≈ " in res.output and not (tmp_path / "r").exists()
