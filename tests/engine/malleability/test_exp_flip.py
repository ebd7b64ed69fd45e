"""The ``flip`` and ``advtrain`` experiments end to end on a tiny sklearn-digits run."""

from __future__ import annotations

import math

import pytest

from engine.errors import ConfigError
from engine.experiments import RunSpec, Summary, TableRow, run
from engine.run.context import Resume
from engine.run.events import CellFinished, Failed
from engine.run.spec import DataSpec, FlipSpec, ModelSpec, TrainSpec
from engine.run.store import TABLE_COLUMNS


def _spec(experiment: str, **flip) -> RunSpec:
    return RunSpec(
        experiment=experiment,
        data=DataSpec(name="digits", n_train=40, n_test=10),
        model=ModelSpec(widths=(16,)),
        train=TrainSpec(epochs=2, batch_size=20),
        flip=FlipSpec(width=16, pgd_steps=2, mim_steps=2, **flip),
        seeds=(0,),
        device="cpu",
        dtype="float64",
    )


def test_flip_and_advtrain_rows_and_summary():
    events = list(run(_spec("flip,advtrain", attacks=("fgsm", "pgd"))))
    assert not [e for e in events if isinstance(e, Failed)], [
        e for e in events if isinstance(e, Failed)
    ]
    rows = [e for e in events if isinstance(e, TableRow) and e.table == "flip_rates"]
    assert len(rows) == 2 * 2 * 2  # kinds × attacks × trainings
    for r in rows:
        assert tuple(r.row) == TABLE_COLUMNS["flip_rates"]
        assert 0.0 <= r.row["flip_rate"] <= 1.0 and r.row["n_selected"] == 4
        assert -1.0 <= r.row["spearman"] <= 1.0 or math.isnan(r.row["spearman"])
    assert {r.row["training"] for r in rows} == {"standard", "adversarial"}
    assert {r.row["model"] for r in rows} == {"2L-ReLU", "MLP-Attn"}
    cells = {e.cell for e in events if isinstance(e, CellFinished)}
    assert "flip/digits/attn/pgd/0.3/0" in cells and "advtrain/digits/relu/fgsm/0.3/0" in cells
    summ = {e.section: e.data for e in events if isinstance(e, Summary)}
    assert summ["flip"]["paper_table"] == 2 and summ["advtrain"]["paper_table"] == 4
    assert len(summ["flip"]["table"]) == 4
    assert summ["flip"]["table"][0]["paper"] is None  # digits is not in the paper
    assert set(summ["flip"]["ratio_attn_relu"]) == {"fgsm", "pgd"}


def test_resume_skips_finished_cells_and_retrain_fails_cleanly():
    done = {f"flip/digits/{k}/fgsm/0.3/0" for k in ("relu", "attn")}
    events = list(run(_spec("flip", attacks=("fgsm",)), resume=Resume(done_cells=done)))
    assert not [e for e in events if isinstance(e, TableRow)]
    with pytest.raises(ConfigError, match="flip.retrain"):  # refused with the spec, before a run
        _spec("flip", attacks=("fgsm",), retrain=True)


def test_grid_rows_share_models_and_carry_protocol_columns():
    grid = dict(ridges=("lambda", "objective"), rankings=("abs_mean", "abs_signed_mean"))
    events = list(run(_spec("flip", attacks=("fgsm",), **grid)))
    assert not [e for e in events if isinstance(e, Failed)]
    rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "flip_rates"]
    assert len(rows) == 2 * 4  # kinds × protocols, one cell per (kind, attack)
    assert {(r["ridge"], r["ranking"]) for r in rows} == {
        (rd, rk)
        for rd in ("lambda:0.001", "objective:0.02")
        for rk in ("abs_mean", "abs_signed_mean")
    }
    for r in rows:
        assert (
            isinstance(r["n_flipped"], int) and r["flip_rate"] == r["n_flipped"] / r["n_selected"]
        )
        assert r["flipped_helpful"] + r["flipped_harmful"] == r["n_flipped"] <= r["n_selected"]
        assert 0 <= r["n_helpful"] <= r["n_selected"]
    # one training per model: two train cells, not eight
    trains = {e.cell for e in events if isinstance(e, CellFinished) and e.cell.startswith("train/")}
    assert len(trains) <= 2
    summ = {e.section: e.data for e in events if isinstance(e, Summary)}["flip"]
    assert {c["ridge"] for c in summ["table"]} == {"objective:0.02"}  # the default protocol
    assert {c["ranking"] for c in summ["table"]} == {"abs_signed_mean"}
    assert len(summ["grid"]) == 4 and any("grid ridge=lambda:0.001" in s for s in summ["headline"])


def test_pgd_step_defaults_to_madry_rule_and_summary_marks_guards():
    """Unset flip.pgd_alpha: α = 2.5·ε/steps (ε 0.3, 10 steps → 0.075; 40 → 0.01875); a
    set one is kept; the attack itself uses the same default. Two epochs cannot converge,
    so every headline line of the flip summary carries the "not converged" mark."""
    import torch

    from engine.attacks import pgd
    from engine.experiments.flip import attack_options

    assert attack_options(FlipSpec(pgd_steps=10), "pgd", 0.3)["alpha"] == 0.075
    assert attack_options(FlipSpec(), "pgd", 0.3)["alpha"] == 0.01875
    assert attack_options(FlipSpec(pgd_alpha=0.01), "pgd", 0.3)["alpha"] == 0.01
    assert (
        FlipSpec().pgd_alpha is None
        and RunSpec.from_toml(RunSpec().to_toml()).flip.pgd_alpha is None
    )
    model = torch.nn.Sequential(torch.nn.Linear(4, 2)).double()
    x = torch.rand(6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1, 0, 1, 0, 1])
    a = pgd(model, x, y, eps=0.3, steps=10, generator=torch.Generator().manual_seed(1))
    b = pgd(model, x, y, eps=0.3, steps=10, alpha=0.075, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a.x_adv, b.x_adv)
    events = list(run(_spec("flip", attacks=("pgd",))))
    rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "flip_rates"]
    assert all(r["converged"] is False for r in rows)
    summ = next(e.data for e in events if isinstance(e, Summary) and e.section == "flip")
    assert summ["protocol"]["pgd_alpha"] == {"0.3": 2.5 * 0.3 / 2}
    assert summ["failed_guards"]["not converged"] == {"2L-ReLU": ["seed=0"], "MLP-Attn": ["seed=0"]}
    lines = summ["headline"]
    assert lines and all(
        "⚠" in ln and "not converged in 1 of 1 cell (seed=0)" in ln for ln in lines
    )
    assert any(
        ln.startswith("standard MLP-Attn / 2L-ReLU") and "2L-ReLU not converged" in ln
        for ln in lines
    )


def test_advtrain_recipes_reach_the_training_loop():
    """flip.adv_recipe fgsm_rs trains exactly as PGD with one step of 1.25·ε from a random
    start, and adv_steps (not the attack's pgd_steps) sets PGD training's steps."""
    import torch

    from engine.run.context import RunContext

    def weights(**flip) -> list[torch.Tensor]:
        ctx = RunContext(_spec("advtrain", **flip))
        gen = ctx.train_model("relu", 16, 0, adversarial=True)
        try:
            while True:
                next(gen)
        except StopIteration as stop:
            return [p.detach().clone() for p in stop.value.model.parameters()]

    fast = weights(adv_recipe="fgsm_rs")
    same = weights(adv_steps=1, adv_alpha=1.25 * 0.3)
    pgd2 = weights()  # pgd_steps = 2 of the attack
    pgd1 = weights(adv_steps=1)
    for a, b in zip(fast, same):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert any(not torch.equal(a, b) for a, b in zip(pgd2, pgd1))


def test_a_cell_stopped_inside_resumes_with_the_points_left():
    """One cell per (model, seed), a marker per (attack, ε): with relu's FGSM point done,
    relu's cell measures PGD alone; attn's cell both; the summary covers every point."""
    spec = _spec("flip", attacks=("fgsm", "pgd"))
    full = [e.row for e in run(spec) if isinstance(e, TableRow) and e.table == "flip_rates"]
    done = {"flip/digits/relu/fgsm/0.3/0"}
    previous = {"flip_rates": [r for r in full if (r["model"], r["attack"]) == ("2L-ReLU", "fgsm")]}
    events = list(run(spec, resume=Resume(done_cells=done, previous_rows=previous)))
    rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "flip_rates"]
    assert [(r["model"], r["attack"]) for r in rows] == [
        ("2L-ReLU", "pgd"),
        ("MLP-Attn", "fgsm"),
        ("MLP-Attn", "pgd"),
    ]
    assert rows == full[1:]  # the same numbers as the uninterrupted run
    cells = [e.cell for e in events if isinstance(e, CellFinished)]
    assert cells == [
        "flip/digits/relu/pgd/0.3/0",
        "flip/digits/relu/0",
        "flip/digits/attn/fgsm/0.3/0",
        "flip/digits/attn/pgd/0.3/0",
        "flip/digits/attn/0",
    ]
    summ = next(e.data for e in events if isinstance(e, Summary) and e.section == "flip")
    assert set(summ["ratio_attn_relu"]) == {"fgsm", "pgd"}


def test_adversarial_training_reports_its_steps_within_an_epoch(monkeypatch):
    """An adversarial epoch (an attack on every batch) can run for minutes: the trainer
    reports its steps (``Progress('batch')``) every ``TICK_SECONDS`` so the run's progress
    moves inside it; each epoch still ends with its ``Progress('cell')``."""
    from engine.run import training
    from engine.run.context import RunContext
    from engine.run.events import Progress

    monkeypatch.setattr(training, "TICK_SECONDS", 0.0)  # every step but an epoch's last
    ctx = RunContext(_spec("advtrain"))
    events = list(ctx.train_model("relu", 16, 0, adversarial=True))
    prog = [(e.task, e.done, e.total) for e in events if isinstance(e, Progress)]
    batches = [p for p in prog if p[0] == "batch"]
    epochs = [p for p in prog if p[0] == "cell" and p[1] > 0]
    assert batches and epochs
    n = batches[0][2]
    assert n >= 2 and all(total == n and 1 <= done < n for _, done, total in batches)
    # between two epochs' ends, the steps of the next epoch in order
    first = prog.index(epochs[0])
    following = [p[1] for p in prog[first + 1 : prog.index(epochs[1])]]
    assert following == list(range(1, n)), prog[:20]
