"""The seeds of a sweep trained side by side (``RunContext.plan_batches``): the rows and
curves are the separate path's (``train.batch_networks = 1``) to 1e-10 in float64."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from trainability_support import tiny_trainability_spec

import engine.train.batched as batched
from engine.experiments import run
from engine.run.context import Resume
from engine.run.events import Artifact, CellFinished, Failed, Metric, TableRow
from engine.run.spec import DataSpec, ModelSpec, NTKSpec, RunSpec, TrainSpec

TOL = 1e-10
DRIFT_TOL = 1e-8
"""Kernel drift: QKV-Attn's eNTK amplifies the ~1e-12 rounding of its weights (bmm vs mm)
about 1000-fold where it drifts fast; measured 1.3e-9 at m = 8, seed 1, epoch 6."""
QKV_TOL = 1e-8
"""QKV-Attn's per-epoch losses: Adam amplifies the bmm-vs-mm rounding there too, by how
much depends on the CPU's kernels: within 1e-10 on one machine, 4.1e-10 on another (the
ntk case's train_loss, epoch 6; 2L-ReLU 2.2e-16 and MLP-Attn 0 on the same run)."""


def _spec(experiment: str, **train: Any) -> RunSpec:
    return RunSpec(
        experiment=experiment,
        data=DataSpec(name="digits", classes=(3, 8), n_train=60, n_test=30),
        model=ModelSpec(kinds=("relu", "attn", "qkv"), widths=(8, 16)),
        train=TrainSpec(**{"epochs": 6, "batch_size": 16, "lr": 3e-3, **train}),
        ntk=NTKSpec(drift_every=2, drift_points=12),
        seeds=(0, 1, 2),
        device="cpu",
        dtype="float64",
    )


def _events(spec: RunSpec, resume: Resume | None = None) -> list[Any]:
    return list(run(spec, resume=resume or Resume()))


def _same(a: Any, b: Any, where: str) -> None:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a):
            assert math.isnan(b), where
        else:
            tol = DRIFT_TOL if "drift" in where else QKV_TOL if "/qkv/" in where else TOL
            assert b == pytest.approx(a, rel=tol, abs=tol), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            if k != "seconds":
                _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, np.ndarray):  # an artifact's array (advtrain's examples)
        np.testing.assert_allclose(b, a, rtol=TOL, atol=TOL, err_msg=where)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b)):
            _same(u, v, f"{where}[{i}]")
    else:
        assert a == b, where


def _outputs(events: list[Any]) -> tuple[list, dict, list]:
    """(rows and artifacts in order, each training cell's metrics, finished cells)."""
    rows = [
        (e.table, e.row) if isinstance(e, TableRow) else (e.name, e.data)
        for e in events
        if isinstance(e, (TableRow, Artifact))
    ]
    metrics: dict[str, list] = {}
    for e in events:
        if isinstance(e, Metric):
            metrics.setdefault(e.cell, []).append((e.name, e.step, e.value))
    return rows, metrics, [e.cell for e in events if isinstance(e, CellFinished)]


def _calls(monkeypatch: pytest.MonkeyPatch, force: bool = True) -> list[int]:
    """The number of networks of each ``train_batched`` call from here on; ``force``: these
    CPU networks (``CPU_MIN_STEP_MACS``: never by default) are batched all the same."""
    if force:
        monkeypatch.setattr(batched, "CPU_MIN_STEP_MACS", 0)
    sizes: list[int] = []
    real = batched.train_batched

    def spy(models, *a, **kw):  # type: ignore[no-untyped-def]
        if not (len(models) == 1 and kw.get("batch_networks") == 1):  # not ``train_one``
            sizes.append(len(models))
        return real(models, *a, **kw)

    monkeypatch.setattr(batched, "train_batched", spy)
    return sizes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("experiment", "kinds", "train"),
    [
        ("ntk", ("relu", "attn", "qkv"), {}),
        (
            "train",
            ("relu", "attn"),
            {"until": "converged", "max_epochs": 80, "check_every": 4, "lr": 1e-2},
        ),
        (  # twins of networks that stopped at different epochs
            "ntk",
            ("relu", "attn"),
            {"until": "converged", "max_epochs": 80, "check_every": 4, "lr": 1e-2},
        ),
    ],
)
def test_seeds_trained_together_give_the_separate_rows(monkeypatch, experiment, kinds, train):
    """ntk (drift probes, twins, QKV on the generic path; 6 epochs), train and ntk until
    converged (each network and twin its own stop): every row, artifact and per-epoch metric equals
    the separate path's; and the seeds did train together, one call of 3 networks per
    (kind, width), 2L-ReLU's and MLP-Attn's of one width in one call of 6 (the fused step
    stacks both kinds, ``Trainer.stack_kinds``). QKV-Attn is left out of the until-converged runs (cap 80 epochs, so that the 10 % + 20 % stop rule lets the networks stop at different epochs): there Adam amplifies its
    ~1e-16 rounding (bmm vs mm) to 3e-8 by epoch 19 at m = 8 (its loss near 0.015), and a
    1e-13 change of its initial weights moves the loss by 4 % (lr 1e-2): chaos, not a
    difference between the paths."""
    sep = _events(_spec(experiment, batch_networks=1, **train).replace(model__kinds=kinds))
    calls = _calls(monkeypatch)
    bat = _events(_spec(experiment, **train).replace(model__kinds=kinds))
    assert not [e for e in sep + bat if isinstance(e, Failed)]
    # each width's 2L-ReLU and MLP-Attn over seeds 0, 1, 2 together, then QKV-Attn's
    # (kind, width) apart; in ntk their linearized twins too
    twins = 2 if experiment == "ntk" else 1
    closed = sum(k in ("relu", "attn") for k in kinds)
    assert calls == [3 * closed] * 2 * twins + [3] * 2 * (len(kinds) - closed) * twins
    (sr, sm, sc), (br, bm, bc) = _outputs(sep), _outputs(bat)
    assert sc == bc and len(sr) == len(br) > 0
    _same(sr, br, "rows")
    assert sm.keys() == bm.keys() and len(sm) == 3 * 2 * len(kinds)
    for cell in sm:
        for (name, step, a), (name_b, step_b, b) in zip(sm[cell], bm[cell]):
            assert (name, step) == (name_b, step_b)
            _same(a, b, f"{cell} {name} {step}")
    if "until" in train:  # the stops differ between networks: a real test of them
        runs = {sum(name == "train_loss" for name, _, _ in bm[c]) for c in bm}
        assert len(runs) > 1, runs


@pytest.mark.slow
def test_resume_trains_only_the_cells_left(monkeypatch):
    """Cells done in the run being resumed are not planned: seed 1's networks are not
    trained, seeds 0 and 2 train together, and their rows are the full run's."""
    spec = _spec("train").replace(model__kinds=("relu",), model__widths=(8,))
    full, _, _ = _outputs(_events(spec))
    calls = _calls(monkeypatch)
    resume = Resume(done_cells=frozenset({"train/digits/relu/8/1"}))
    rows, _, cells = _outputs(_events(spec, resume))
    assert calls == [2]
    assert cells == ["train/digits/relu/8/0", "train/digits/relu/8/2"]
    kept = [(t, r) for t, r in full if r.get("seed", 0) != 1 and "seed" in r]
    _same(kept, [(t, r) for t, r in rows if "seed" in r], "rows")


def test_a_divergence_fails_the_run_as_the_separate_path_does(monkeypatch):
    """Every network blows up at lr 1e6: the first seed's cell fails with the separate
    path's message, no row written, in both paths."""
    spec = _spec("train", optimizer="sgd", lr=1e6).replace(
        model__kinds=("relu",), model__widths=(8,)
    )
    fails = []
    for sp in (spec.replace(train__batch_networks=1), spec):
        calls = _calls(monkeypatch)
        evs = _events(sp)
        assert calls == ([] if sp.train.batch_networks == 1 else [3])
        assert not [e for e in evs if isinstance(e, TableRow)]
        fails.append([e.message for e in evs if isinstance(e, Failed)])
    assert fails[0] == fails[1] and len(fails[0]) == 1
    assert "diverged" in fails[0][0]


@pytest.mark.slow
def test_trainability_points_trained_together_give_the_separate_rows(monkeypatch):
    """The κ points of a model (every κ and seed: one shape, each its own synthetic data
    and stop at the target or the cap) train in one call; rows equal the separate path's."""
    spec = tiny_trainability_spec((0, 1), max_steps=300, dtype="float64")
    sep, _, _ = _outputs(_events(spec.replace(train__batch_networks=1)))
    calls = _calls(monkeypatch)
    bat, _, _ = _outputs(_events(spec))
    assert calls == [6, 6]  # per model: 3 κ × 2 seeds
    assert len(sep) == len(bat) == 16  # and each seed's own data set, apart
    _same(sep, bat, "rows")
    syn = [r for _, r in bat if r["dataset"] == "synthetic-gram"]
    assert {r["censored"] for r in syn} == {False, True}  # both stops happen
    assert len({r["steps_to_converge"] for r in syn}) > 2


def test_small_steps_train_one_at_a_time(monkeypatch):
    """Autograd: steps under the threshold (on a CPU by default every step: batching seeds
    bought nothing there) train one at a time; at the threshold, side by side. The fused
    step stacks the seeds whatever their size."""
    fused = _spec("ntk").replace(model__kinds=("relu",), model__widths=(8,))
    spec = fused.replace(train__engine="autograd")
    calls = _calls(monkeypatch, force=False)
    assert not [e for e in _events(spec) if isinstance(e, Failed)]
    assert calls == []
    assert not [e for e in _events(fused) if isinstance(e, Failed)]
    assert calls == [3, 3]  # the networks, then their twins
    calls.clear()
    monkeypatch.setattr(batched, "CPU_MIN_STEP_MACS", 16 * 8 * 64)  # batch × m × d: reached
    assert not [e for e in _events(spec) if isinstance(e, Failed)]
    assert calls == [3, 3]


def test_advtrain_seeds_trained_together_give_the_separate_rows(monkeypatch):
    """advtrain: the seeds of both models train adversarially in one stacked call (each
    its own subset, feature map, PGD random starts and stop); its flip rates and training
    curves are the separate path's."""
    from engine.run.spec import FlipSpec

    flip = FlipSpec(width=8, pgd_steps=2, mim_steps=2, adv_steps=2, attacks=("fgsm",))
    spec = _spec("advtrain", epochs=3).replace(model__kinds=("relu", "attn"), flip=flip)
    sep = _events(spec.replace(train__batch_networks=1))
    calls = _calls(monkeypatch, force=False)
    bat = _events(spec)
    assert not [e for e in sep + bat if isinstance(e, Failed)]
    assert calls == [6]  # 3 seeds × 2 models, one stack
    (sr, sm, sc), (br, bm, bc) = _outputs(sep), _outputs(bat)
    assert sc == bc and len(sr) == len(br) > 0
    _same(sr, br, "rows")
    assert sm.keys() == bm.keys() and len(sm) == 3 * 2  # 3 seeds × 2 models
    for cell in sm:
        for (name, step, a), (name_b, step_b, b) in zip(sm[cell], bm[cell]):
            assert (name, step) == (name_b, step_b)
            _same(a, b, f"{cell} {name} {step}")


def test_one_seed_trains_both_closed_form_kinds_in_one_stack(monkeypatch):
    """One seed (``reproduce --quick``): 2L-ReLU and MLP-Attn of each width train in one
    fused stack of 2 (each its own stop under ``until = converged``), their twins too;
    rows and per-epoch metrics are the separate path's; QKV-Attn and the autograd engine
    train apart."""
    train = {"until": "converged", "max_epochs": 40, "check_every": 4, "lr": 1e-2}
    spec = _spec("ntk", **train).replace(seeds=(0,), model__widths=(8,))
    sep = _events(spec.replace(train__batch_networks=1))
    calls = _calls(monkeypatch, force=False)
    bat = _events(spec)
    assert calls == [2, 2]  # the networks, then their twins; QKV-Attn alone
    assert not [e for e in sep + bat if isinstance(e, Failed)]
    (sr, sm, sc), (br, bm, bc) = _outputs(sep), _outputs(bat)
    assert sc == bc and len(sr) == len(br) > 0
    _same(sr, br, "rows")
    assert sm.keys() == bm.keys()
    for cell in sm:
        assert [(n, s) for n, s, _ in sm[cell]] == [(n, s) for n, s, _ in bm[cell]], cell
        for (name, step, a), (_, _, b) in zip(sm[cell], bm[cell]):
            _same(a, b, f"{cell} {name} {step}")
    calls.clear()
    assert not [e for e in _events(spec.replace(train__engine="autograd")) if isinstance(e, Failed)]
    assert calls == []
