"""The run-time estimate (engine/experiments/estimate.py): FLOPs and steps of a spec's plan."""

from __future__ import annotations

import math

from typer.testing import CliRunner

from engine.experiments.estimate import (
    CONFIRM_SECONDS,
    PER_RUN_SECONDS,
    breakdown,
    estimate_seconds,
    first_check,
    planned_flops,
    planned_shares,
    planned_work,
    probe_shape_flops,
    probe_step_seconds,
    probe_update_seconds,
)
from engine.experiments.work import (
    ADV_OVERHEAD,
    BATCHED_OVERHEAD,
    BATCHED_STEP,
    NOMINAL_UPDATE_S,
    OVERHEAD,
    TRAIN_OVERHEAD,
    Plan,
    Work,
)
from engine.reproduce.presets import apply_quick
from engine.run.spec import RunSpec
from engine.train.batched import MIN_STEP_MACS

RATE = 2e10  # FLOP/s of a small CPU core pair; fixed so the tests do not time anything
STEP = 1e-3  # seconds a training step costs beyond its FLOPs; fixed likewise


def test_train_work_is_the_formula():
    spec = RunSpec(experiment="train", seeds=(0, 1)).replace(
        data__n_train=100,
        model__widths=(16, 64),
        train__epochs=3,
        train__batch_size=32,
        train__batch_networks=1,  # one network at a time; batched below
        train__engine="autograd",  # the fused step's accounting: test_fused_steps_...
    )
    d = 64  # digits: 8×8
    assert planned_flops(spec) == 4.0 * 100 * d * (16 + 64) * 3 * 2 * 2
    steps = 3 * 4 * 2 * 2 * 2  # epochs × ⌈100/32⌉ batches × widths × kinds × seeds
    # each optimiser step updates a network's m·d first-layer weights
    updated = d * (16 + 64) * 3 * 4 * 2 * 2  # Σ m·d × steps a network × kinds × seeds
    # the FLOPs by their step's shape (batch 32, d, m), for the shape's own rate

    def shaped(k: float) -> tuple[tuple[tuple[int, int, int], float], ...]:
        return tuple(((32, d, m), k * 4.0 * 100 * d * m * 3 * 2 * 2) for m in (16, 64))

    want = Work(planned_flops(spec), steps, updated=updated, shaped=shaped(1))
    assert planned_work(spec)["train"] == want
    gd = planned_work(spec.replace(train__optimizer="gd"))["train"]
    assert gd.steps == 3 * 1 * 2 * 2 * 2  # full batch: one step an epoch
    # ntk trains the same cells (counted once for both) and adds its kernels (two eNTKs
    # 2·N²·(d + m) and two n³ solves per cell, N = n_train + n_test) and the linearized
    # twins (twice the training, FLOPs and steps)
    big_n = 100 + spec.data.n_test
    kernels = sum(2 * 2.0 * big_n**2 * (d + w) + 2 * big_n**3 for w in (16, 64)) * 2 * 2
    by = planned_work(spec.replace(experiment="train,ntk"))
    assert by["train"] == planned_work(spec)["train"]
    # the twins' optimiser updates: one a step, as the networks'
    assert by["ntk"] == Work(
        kernels + 2 * planned_flops(spec), 2 * steps, updated=updated, shaped=shaped(2)
    )
    # until = converged: the cap's epochs (an upper bound), 12 = 4 × 3
    capped = spec.replace(train__until="converged", train__max_epochs=12)
    assert planned_work(capped)["train"] == Work(
        4 * planned_flops(spec), 4 * steps, updated=4 * updated, shaped=shaped(4)
    )


def test_seeds_trained_together_cost_batched_steps_and_flops(monkeypatch):
    """The seeds of a (kind, width) train side by side: BATCHED_STEP a step of the group
    instead of one a seed, their FLOPs at BATCHED_OVERHEAD; the twins of ntk likewise."""
    import engine.train.batched as batched

    cpu = RunSpec(experiment="train", seeds=(0, 1, 2), device="cpu").replace(
        train__engine="autograd"
    )
    assert planned_work(cpu)["train"].batched == 0  # on a CPU: never (measured)
    monkeypatch.setattr(batched, "CPU_MIN_STEP_MACS", MIN_STEP_MACS)  # as on a GPU
    spec = RunSpec(experiment="train,ntk", seeds=(0, 1, 2), device="cpu").replace(
        data__n_train=100,
        model__widths=(8, 1024, 4096),
        train__epochs=3,
        train__batch_size=32,
        train__engine="autograd",
    )
    sep = planned_work(spec.replace(train__batch_networks=1))
    bat = planned_work(spec)
    # batch 32 × d 64 × m: 16 K at m 8, under MIN_STEP_MACS (one at a time); 2 M and 8 M
    # at m 1024 and 4096: batched when ≥ MIN_STEP_MACS
    fast = [w for w in (8, 1024, 4096) if 32 * 64 * w >= MIN_STEP_MACS]
    assert 8 not in fast and 4096 in fast
    per = 3 * 4 * 2  # epochs × batches × kinds
    want = per * (3 * (3 - len(fast)) + BATCHED_STEP * len(fast))
    assert sep["train"].steps == per * 3 * 3 and bat["train"].steps == want
    assert bat["ntk"].steps == 2 * want
    assert bat["train"].flops == sep["train"].flops and sep["train"].batched == 0
    assert bat["train"].batched == sum(4.0 * 100 * 64 * w * 3 * 2 * 3 for w in fast)
    secs = bat["train"].seconds(RATE, STEP)
    assert math.isclose(
        secs,
        (
            OVERHEAD * (bat["train"].flops - bat["train"].batched)
            + BATCHED_OVERHEAD * bat["train"].batched
        )
        / RATE
        + STEP * bat["train"].steps
        + NOMINAL_UPDATE_S * bat["train"].updated,
    )
    one = planned_work(spec.replace(seeds=(0,)))  # one seed: nothing to batch
    assert one["train"].batched == 0 and one["train"].steps == per * 3


def test_adversarial_training_cost_follows_the_recipe():
    spec = RunSpec(experiment="advtrain").replace(flip__pgd_steps=40, flip__mim_steps=10)
    pgd40 = planned_flops(spec)
    fast = planned_flops(spec.replace(flip__adv_recipe="fgsm_rs"))
    pgd10 = planned_flops(spec.replace(flip__adv_steps=10))
    n, d, m, ep = spec.data.n_train, 64, spec.flip.width, spec.train.epochs
    per_step = 6.0 * n * d * m * ep * 2 * len(spec.seeds)  # × kinds × seeds
    assert pgd40 - fast == per_step * (40 - 1) and pgd40 - pgd10 == per_step * 30
    w40, wf = (
        planned_work(spec)["advtrain"],
        planned_work(spec.replace(flip__adv_recipe="fgsm_rs"))["advtrain"],
    )
    assert w40.all_steps > 20 * wf.all_steps / 2  # 41 passes a step against 2


def test_breakdown_adds_up_to_the_estimate():
    specs = [
        RunSpec(experiment="all").replace(train__batch_networks=1),
        apply_quick(RunSpec(experiment="train,spectrum")),
    ]
    lines = breakdown([("a", specs[0]), ("b", specs[1])], flops_per_s=RATE, step_s=STEP)
    total = sum(ln.estimate_s for ln in lines)
    assert math.isclose(total, estimate_seconds(specs, flops_per_s=RATE, step_s=STEP))
    assert {ln.experiment for ln in lines if ln.run == "b"} == {"train", "spectrum"}
    works = {(r, e): w for r, sp in zip("ab", specs) for e, w in planned_work(sp).items()}
    for ln in lines[:-1]:
        adv = works[ln.run, ln.experiment].adversarial / RATE  # adversarial training's floor
        assert (adv > 0) == (ln.experiment == "advtrain")
        want = OVERHEAD * (ln.floor_s - adv) + ADV_OVERHEAD * adv + STEP * ln.steps
        want += NOMINAL_UPDATE_S * ln.updated  # the optimiser's updates, nominal price
        assert math.isclose(ln.estimate_s, want)
    assert lines[-1].estimate_s == 2 * PER_RUN_SECONDS


def test_all_resolves_every_experiment_and_adds_work():
    spec = RunSpec(experiment="train")
    everything = spec.replace(experiment="all")
    assert planned_flops(everything) > planned_flops(spec) > 0
    assert planned_flops(spec.replace(experiment="flip")) > 0
    assert planned_flops(spec.replace(experiment="landscape")) > 0
    shares = planned_shares(everything)
    assert list(shares) == list(planned_work(everything)) and math.isclose(sum(shares.values()), 1)


def test_paper_spec_asks_to_confirm_and_quick_does_not():
    paper = RunSpec(experiment="all").replace(data__name="mnist")
    quick = apply_quick(RunSpec(experiment="all"))
    assert estimate_seconds([paper], flops_per_s=RATE, step_s=STEP) > CONFIRM_SECONDS
    assert estimate_seconds([quick], flops_per_s=RATE, step_s=STEP) < CONFIRM_SECONDS


def test_the_step_probe_times_the_real_loop():
    s = probe_step_seconds()
    assert 1e-6 < s < 1.0 and probe_step_seconds() == s  # measured once a process
    stacked = probe_step_seconds("fused", 3)
    assert 1e-6 < stacked < 1.0 and probe_step_seconds("fused", 3) == stacked


def test_training_flops_are_priced_at_their_shapes_rate():
    w = Work(flops=10e9, shaped=(((32, 784, 1024), 6e9),))
    half = w.seconds(RATE, STEP, shape_rate=lambda b, d, m: RATE / 2)
    assert math.isclose(half, OVERHEAD * 4e9 / RATE + TRAIN_OVERHEAD * 6e9 / (RATE / 2))
    assert math.isclose(w.seconds(RATE, STEP), OVERHEAD * 10e9 / RATE)  # no shape rate
    r = probe_shape_flops(32, 64, 128)
    assert 1e6 < r < 1e14 and probe_shape_flops(32, 64, 128) == r  # once a process


def test_the_update_probe_prices_a_parameter_and_is_counted_per_step():
    u = probe_update_seconds()
    # Adam reads and writes 28 bytes a parameter: between 1 TB/s and 10 MB/s
    assert 2.8e-11 < u < 2.8e-6 and probe_update_seconds() == u  # once a process
    assert 0 < probe_update_seconds("gd") < 2.8e-6
    spec = RunSpec(experiment="advtrain", seeds=(0,)).replace(data__n_train=64)
    adv = planned_work(spec)["advtrain"]
    p = Plan(spec)
    # adversarial training: one update of the flip width's m·d weights a training step
    assert adv.updated == spec.flip.width * p.d * p.ep * p.batches * p.cells


def test_fused_steps_are_stacked_per_width():
    """2L-ReLU and MLP-Attn (fused): one stacked step of a chunk of both kinds' seeds per
    width (``Trainer.stack_kinds``); QKV-Attn: an autograd step per seed; priced by
    ``fused_s(B)`` and ``step_s``."""
    spec = RunSpec(experiment="train,ntk", seeds=(0, 1, 2), device="cpu").replace(
        data__n_train=100,
        model__kinds=("relu", "attn", "qkv"),
        model__widths=(8, 64),
        train__epochs=3,
        train__batch_size=32,
    )
    per = 3 * 4  # epochs × ⌈100/32⌉ batches
    work = planned_work(spec)
    assert work["train"].steps == per * 2 * 3  # qkv: widths × seeds
    assert work["train"].fused == ((6, per * 2),)  # widths, stacks of 3 seeds × relu, attn
    # the twins: an autograd twin costs two steps, a fused one one
    assert work["ntk"].steps == 2 * per * 2 * 3 and work["ntk"].fused == ((6, per * 2),)
    # and their FLOPs: a fused twin's step runs its network's two products (x̃W₀ᵀ is
    # computed once, chunk.Chunk), an autograd twin's a forward and a JVP: twice them
    big_n = 100 + spec.data.n_test
    kernels = sum(2 * 2.0 * big_n**2 * (64 + w) + 2 * big_n**3 for w in (8, 64)) * 3 * 3
    net = 4.0 * 100 * 64 * (8 + 64) * 3 * 3  # one kind's networks: n·d·Σm × epochs × seeds
    assert math.isclose(work["ntk"].flops, kernels + (1 + 1 + 2) * net)
    assert math.isclose(sum(v for _, v in work["ntk"].shaped), (1 + 1 + 2) * net)
    auto_ntk = planned_work(spec.replace(train__engine="autograd"))["ntk"]
    assert math.isclose(auto_ntk.flops, kernels + 3 * 2 * net)
    two = planned_work(spec.replace(train__batch_networks=2))["train"]
    assert two.fused == ((2, 3 * per * 2),)  # 6 networks: three chunks of 2 a width
    one = planned_work(spec.replace(seeds=(0,)))["train"]  # --quick: one seed
    assert one.fused == ((2, per * 2),)  # relu and attn of a width, one stack of 2
    secs = work["train"].seconds(RATE, STEP, lambda b: 1e-4 * b)
    assert math.isclose(
        secs,
        OVERHEAD * work["train"].flops / RATE
        + STEP * per * 6
        + 6e-4 * per * 2
        + NOMINAL_UPDATE_S * work["train"].updated,
    )
    auto = planned_work(spec.replace(train__engine="autograd"))["train"]
    assert auto.fused == () and auto.steps == per * 2 * 3 * 3
    assert auto.flops == work["train"].flops


def test_adversarial_steps_of_fused_kinds_are_fused_steps_of_one_network():
    """advtrain's passes and flip's attack steps: 2L-ReLU and MLP-Attn (closed-form input
    gradient) as fused steps of one network, QKV-Attn (and every kind under autograd) as
    autograd steps; the same FLOPs either way."""
    spec = RunSpec(experiment="advtrain,flip", seeds=(0, 1), device="cpu").replace(
        data__n_train=64,
        model__kinds=("relu", "attn", "qkv"),
        train__epochs=2,
        train__batch_size=32,
        flip__pgd_steps=3,
        flip__mim_steps=2,
        flip__adv_steps=3,
        flip__eps=(0.1, 0.3),
    )
    attack = (1 + 3 + 2) * 2  # FGSM + PGD + MIM steps, per ε
    adv = 2 * 2 * (1 + 3)  # epochs × batches × (step + PGD steps)
    work = planned_work(spec)
    assert work["advtrain"].steps == (adv + attack) * 2  # qkv × seeds
    # relu, attn: adversarial training's passes with both seeds of both kinds stacked,
    # the attacks one network at a time; the adversarial FLOPs are all the training's
    assert work["advtrain"].fused == ((1, attack * 2 * 2), (4, adv))
    adv_flops = 6.0 * 64 * 64 * spec.flip.width * 2 * (1 + 3) * 3 * 2  # n·d·m·epochs·passes·cells
    assert work["advtrain"].adversarial == adv_flops
    auto = planned_work(spec.replace(train__engine="autograd"))
    assert auto["advtrain"].fused == () and auto["advtrain"].steps == (adv + attack) * 3 * 2
    assert auto["advtrain"].flops == work["advtrain"].flops
    # flip: the attacks one network at a time; its training stacks the seeds
    assert dict(work["flip"].fused)[1] == attack * 2 * 2


def test_reproduce_dry_run_prints_the_estimate(tmp_path):
    from malleability_tui.cli.main import app

    res = CliRunner().invoke(
        app,
        ["reproduce", "--dataset", "digits", "--quick", "--dry-run", "--out", str(tmp_path / "r")],
    )
    assert res.exit_code == 0, res.output
    assert "estimated run time ≈ " in res.output and not (tmp_path / "r").exists()
    assert "FLOP floor" in res.output and "time budget" in res.output
    assert "advtrain" in res.output and "%" in res.output


def test_reproduce_adv_recipe_reaches_the_plan(tmp_path):
    from malleability_tui.cli.main import app

    base = ["reproduce", "--dataset", "digits", "--quick", "--dry-run", "--tables", "4"]
    runner = CliRunner()
    flops = {}
    for recipe in ("pgd", "fgsm_rs"):
        res = runner.invoke(app, [*base, "--adv-recipe", recipe])
        assert res.exit_code == 0, res.output
        line = next(ln for ln in res.output.splitlines() if " advtrain " in ln)
        flops[recipe] = float(line.split()[2])
    assert flops["fgsm_rs"] < flops["pgd"] / 3  # 1 + 1 attack passes a step instead of 1 + 10
    bad = runner.invoke(app, [*base, "--adv-recipe", "trades"])
    assert bad.exit_code != 0 and "--adv-recipe" in bad.output
    assert "Traceback" not in bad.output


def test_influence_check_work_counts_retrainings_batched_or_not():
    import pytest

    from engine.experiments.work import BATCHED_STEP

    spec = RunSpec(experiment="influence_check", seeds=(0, 1)).replace(
        train__epochs=5,
        train__batch_size=128,
        influence_check__n_train=200,
        influence_check__n_test=100,
        influence_check__width=32,
        influence_check__top=3,
        influence_check__random=2,
        train__engine="autograd",
        influence_check__truth="retrain",
    )
    d, cells, nets = 64, 2 * 2, 2 * (3 + 2 + 1)  # digits 8×8; relu, attn × 2 seeds
    batched = planned_work(spec)["influence_check"]
    separate = planned_work(spec.replace(train__batch_networks=1))["influence_check"]
    one = 4.0 * 200 * d * 32 * 5
    kernels = 2 * 2.0 * 300**2 * (d + 32) + 3.0 * 200**3
    assert batched.flops == separate.flops == ((1 + nets) * one + kernels) * cells
    assert separate.steps == (5 * 2 + nets * 5 * 2) * cells  # 2 batches an epoch
    assert batched.steps == (5 * 2 + BATCHED_STEP * 1 * 5 * 2) * cells  # one chunk of 12
    assert (
        planned_work(spec.replace(train__batch_networks=5))["influence_check"].steps
        == (5 * 2 + BATCHED_STEP * 3 * 5 * 2) * cells
    )
    # the PBRF truth retrains nothing: one solve of 2 × 25 L-BFGS steps (the truth its
    # checkpoint, the noise floor its end) for the 5 points at once, on the span head
    # (P = m·r, r = min(n, d) = 64): 6 + 2·2 passes' FLOPs a step in float64 (× 2), and
    # the two-loop recursion streaming min(i, 20) history pairs at step i
    pbrf = planned_work(spec.replace(influence_check__truth="pbrf"))["influence_check"]
    steps, k, r = 50, 5, 64
    pairs = sum(range(20)) + 30 * 20
    # then the active set twice (truth and floor), 6 rounds a point, each an LU of
    # N = 200 + 0.005·200·32 = 232 unknowns, (2/3)·N³, and 4 products with G [200, 200]
    # times A [200, 32], float64 FLOPs (× 2); the points one batch: a step a round
    polish = 2 * ((2 / 3) * 232.0**3 + 4 * 2.0 * 200 * 200 * 32) * k * 2 * 6
    lbfgs = 2 * 10.0 * k * 200 * r * 32 * steps
    assert pbrf.flops == pytest.approx((one + kernels + lbfgs + polish) * cells, rel=1e-12)
    assert pbrf.streamed == k * 32 * r * (10.0 * pairs + 10.0 * steps) * cells
    assert pbrf.steps == (5 * 2 + 3 * steps + 2 * 6) * cells
    no_floor = planned_work(
        spec.replace(influence_check__truth="pbrf", influence_check__noise_floor=False)
    )
    assert no_floor["influence_check"].streamed < pbrf.streamed / 2  # 25 steps, a short history
    assert planned_work(spec)["influence_check"].streamed == 0  # retraining: no PBRF


def test_every_registered_experiment_registers_its_estimate():
    """The estimate is part of an experiment's registration: every listed experiment has
    one that prices work, and registering one without it fails."""
    import pytest

    from engine.experiments.registry import LISTING, experiments, register

    known = experiments()
    assert set(known) == set(LISTING)
    base = RunSpec(seeds=(0,)).replace(
        data__n_train=50, data__n_test=20, model__widths=(8,), train__epochs=2,
        landscape__width=8, flip__width=8, influence_check__n_train=40,
        influence_check__n_test=20, influence_check__width=8, kappa__n_train=40,
        kappa__n_test=20, trainability__max_steps=100,
    )  # fmt: skip
    for name, e in known.items():
        work = planned_work(base.replace(experiment=name))
        assert list(work) == [name] and work[name] == e.estimate(
            Plan(base.replace(experiment=name))
        )
        assert work[name].seconds(RATE, STEP) > 0, name
    with pytest.raises(TypeError, match="estimate"):
        register("train")(lambda ctx: iter(()))  # type: ignore[call-arg]


def test_trainability_is_priced_at_its_step_cap():
    spec = RunSpec(experiment="trainability", seeds=(0,)).replace(
        model__kinds=("qkv",), trainability__max_steps=1000, trainability__width=16
    )
    w = planned_work(spec)["trainability"]
    cells = len(spec.trainability.kappas) + 1
    assert w.steps == 1000 * cells  # an upper bound: every cell censored
    b = min(spec.train.batch_size, 64)
    synth = 4.0 * b * 64 * 16 * 1000
    assert w.flops > len(spec.trainability.kappas) * synth
    doubled = planned_work(spec.replace(trainability__max_steps=2000))["trainability"]
    assert doubled.steps == 2 * w.steps and math.isclose(doubled.flops, 2 * w.flops)


def test_the_stream_probe_times_a_vector_update():
    from engine.experiments.estimate import probe_stream_seconds

    s = probe_stream_seconds()
    assert 1e-12 < s < 1e-6 and probe_stream_seconds() == s  # measured once a process


def test_first_check_is_the_lower_bound_of_until_converged():
    """until = converged: the estimate counts the cap's epochs; ``first_check`` the
    epochs of the first check (train.epochs), in proportion; a fixed spec is itself."""
    conv = RunSpec(experiment="train").replace(
        train__until="converged", train__epochs=100, train__max_epochs=400
    )
    high = planned_work(conv)["train"]
    low = planned_work(first_check(conv))["train"]
    assert math.isclose(high.flops, 4 * low.flops) and math.isclose(high.updated, 4 * low.updated)
    fixed = conv.replace(train__until="fixed")
    assert first_check(fixed) is fixed


def test_until_converged_is_priced_at_the_expected_stopping_epoch():
    """until = converged: the estimate lies ``STOP_SHARE`` of the way from the first
    check's price to the cap's, which is the price of every cell stopping at its expected
    epoch (the estimate is linear in the epochs); a fixed spec's three prices agree."""
    from engine.experiments.estimate import STOP_SHARE, until_estimate

    def priced(specs):
        return estimate_seconds(specs, flops_per_s=RATE, step_s=STEP)

    conv = apply_quick(RunSpec(experiment="ntk,flip,advtrain")).replace(
        train__until="converged", train__epochs=100, train__max_epochs=2100
    )
    est, low, cap = until_estimate([conv], priced)
    assert low < est < cap
    assert math.isclose(cap, priced([conv])) and math.isclose(low, priced([first_check(conv)]))
    expected = 100 + STOP_SHARE * 2000
    at = conv.replace(train__until="fixed", train__epochs=round(expected))
    assert math.isclose(
        est, priced([at]), rel_tol=abs(expected - round(expected)) / expected + 1e-9
    )
    fixed = conv.replace(train__until="fixed")
    assert len({round(v, 9) for v in until_estimate([fixed], priced)}) == 1
