"""The ``influence_check`` experiment: rows, selection, the noise floor, and ``all``."""

from __future__ import annotations

import csv

import pytest

from engine.errors import ConfigError
from engine.experiments import run
from engine.experiments.influence_check import summarize
from engine.experiments.registry import select, subset_sizes
from engine.run.events import Artifact, Failed, Log, Summary, TableRow
from engine.run.spec import (
    DataSpec,
    InfluenceCheckSpec,
    ModelSpec,
    NTKSpec,
    RunSpec,
    TrainSpec,
)
from engine.run.store import TABLE_COLUMNS, RunStore


def _spec(**ic) -> RunSpec:
    return RunSpec(
        experiment="influence_check",
        data=DataSpec(name="digits", classes=(3, 8)),
        model=ModelSpec(kinds=("relu", "attn"), widths=(8,)),
        train=TrainSpec(epochs=4, batch_size=10),
        ntk=NTKSpec(drift_every=0),
        influence_check=InfluenceCheckSpec(
            **{
                "n_train": 30,
                "n_test": 10,
                "width": 8,
                "top": 3,
                "random": 3,
                "truth": "both",
                **ic,
            }
        ),
        seeds=(0,),
        device="cpu",
        dtype="float64",
    )


def _run(spec: RunSpec, tmp_path):
    store = RunStore(tmp_path / "run", spec)
    events = []
    for ev in run(spec):
        store.write(ev)
        events.append(ev)
    store.close("finished")
    assert not [e for e in events if isinstance(e, Failed)]
    return events, tmp_path / "run"


def test_rows_cover_every_estimator_and_model(tmp_path):
    events, out = _run(_spec(gradient=("exact", "cg")), tmp_path)
    rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "influence_check"]
    got = {(r["model"], r["estimator"], r["ridge"]) for r in rows}
    for model in ("2L-ReLU", "MLP-Attn"):
        for ridge in ("lambda:0.001", "objective:0.015", "nlambda:0.03"):
            assert (model, "kernel_loo", ridge) in got
        assert (model, "gradient_cg", "lambda:0.001") in got
        assert (model, "gradient_exact", "lambda:0.001") in got
        assert (model, "retrain_other_order", "") in got
        assert (model, "pbrf_more_steps", "") in got
        assert (model, "pbrf", "") in got  # the PBRF against retraining: do the truths agree?
    truths = {(r["estimator"], r["truth"]) for r in rows}
    assert ("gradient_cg", "pbrf") in truths and ("gradient_cg", "retrain") in truths
    assert ("pbrf_more_steps", "pbrf") in truths and ("pbrf", "retrain") in truths
    for r in rows:
        # against the PBRF only the points whose solve met pbrf_tol are compared
        pbrf_row = "pbrf" in (r["truth"], r["estimator"])
        assert pbrf_row or (r["n_dropped"], r["dropped"]) == (0, "")  # retraining drops none
        assert r["n_points"] + r["n_dropped"] == 6 and r["n_train"] == 30
        assert isinstance(r["converged"], bool) and isinstance(r["above_chance"], bool)
        assert -1 <= r["spearman"] <= 1 or r["spearman"] != r["spearman"]
        assert 0 <= r["sign_agreement"] <= 1
    with open(out / "influence_check.csv", newline="") as f:
        header = next(csv.reader(f))
    assert tuple(header) == TABLE_COLUMNS["influence_check"]
    art = [e for e in events if isinstance(e, Artifact) and e.name == "influence_check_scores"]
    assert len(art) == 2 and len(art[0].data["indices"]) == 6 and art[0].data["n_top"] == 3
    assert len(set(art[0].data["indices"])) == 6  # the random points are not the top ones
    summ = [e for e in events if isinstance(e, Summary) and e.section == "influence_check"][0]
    heads = summ.data["headline"]
    # per model: against the PBRF, against retraining, the truths; and the points dropped
    drops = sum(
        h.startswith(("2L-ReLU: points left out", "MLP-Attn: points left out")) for h in heads
    )
    assert len(heads) == 6 + drops
    against_pbrf = [h for h in heads if "closest to the PBRF" in h or "against the PBRF" in h]
    assert len(against_pbrf) == 2
    assert sum("the two truths" in h for h in heads) == 2
    assert all(
        "closest to" in h or "INCONCLUSIVE" in h or "truths" in h or "points left out" in h
        for h in heads
    )


def test_exact_gradient_has_no_parameter_cap_on_the_two_layer_heads(tmp_path):
    """2L-ReLU and MLP-Attn solve exact on the Gauss–Newton kernel (the dense cap is for
    other models; its skip is tested in tests/engine/influence/test_pbrf.py)."""
    events, _ = _run(_spec(exact_max_params=100, noise_floor=False), tmp_path)
    rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "influence_check"]
    assert {r["model"] for r in rows if r["estimator"] == "gradient_exact"} == {
        "2L-ReLU",
        "MLP-Attn",
    }
    assert not [r for r in rows if r["estimator"] in ("gradient_cg", "retrain_other_order")]
    logs = " ".join(getattr(e, "message", "") for e in events)
    assert "gradient (exact) skipped" not in logs


def test_full_batch_gd_has_no_batch_order_noise(tmp_path):
    """Full-batch GD draws no batches: retraining with "another order" is the same
    retraining, so it agrees with the truth exactly (the noise floor's known answer)."""
    spec = _spec(gradient=()).replace(train__optimizer="gd", train__lr=0.5, model__kinds=("relu",))
    events, _ = _run(spec, tmp_path)
    noise = [
        e.row
        for e in events
        if isinstance(e, TableRow) and e.row.get("estimator") == "retrain_other_order"
    ]
    assert (
        noise and noise[0]["spearman"] == pytest.approx(1.0) and noise[0]["sign_agreement"] == 1.0
    )


def test_all_leaves_it_out_and_its_subset_is_checked():
    assert "influence_check" not in [e.name for e in select("all")]
    assert [e.name for e in select("influence_check")] == ["influence_check"]
    spec = _spec()
    assert subset_sizes(spec) == [(30, 10)]
    assert subset_sizes(spec.replace(experiment="train,influence_check")) == [(1000, 200), (30, 10)]


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match="influence_check.context"):
        InfluenceCheckSpec(context="frozen")
    with pytest.raises(ConfigError, match="influence_check.gradient"):
        InfluenceCheckSpec(gradient=("lissa",))
    with pytest.raises(ConfigError, match="influence_check.top"):
        InfluenceCheckSpec(top=1, random=1)
    with pytest.raises(ConfigError, match="influence_check.ridges"):
        InfluenceCheckSpec(ridges=("half",))
    with pytest.raises(ConfigError, match="influence_check.truth"):
        InfluenceCheckSpec(truth="scratch")
    with pytest.raises(ConfigError, match="influence_check.pbrf_min_points"):
        InfluenceCheckSpec(pbrf_min_points=2)
    with pytest.raises(ConfigError, match="influence_check.pbrf_steps"):
        InfluenceCheckSpec(pbrf_steps=0)


def test_summary_names_the_estimator_with_the_highest_rank_correlation():
    base = {"model": "2L-ReLU", "n_points": 40, "seconds": 0.1}
    rows = [
        {
            **base,
            "estimator": "kernel_loo",
            "ridge": "lambda:0.001",
            "spearman": 0.2,
            "sign_agreement": 0.6,
            "seed": 0,
        },
        {
            **base,
            "estimator": "kernel_loo",
            "ridge": "objective:0.1",
            "spearman": 0.7,
            "sign_agreement": 0.8,
            "seed": 0,
        },
        {
            **base,
            "estimator": "kernel_loo",
            "ridge": "objective:0.1",
            "spearman": 0.5,
            "sign_agreement": 0.9,
            "seed": 1,
        },
        {
            **base,
            "estimator": "retrain_other_order",
            "ridge": "",
            "spearman": 0.95,
            "spearman_p": 1e-9,
            "sign_agreement": 1.0,
            "seed": 0,
        },
        {
            **base,
            "estimator": "retrain_other_order",
            "ridge": "",
            "spearman": 0.9,
            "spearman_p": 1e-8,
            "sign_agreement": 1.0,
            "seed": 1,
        },
    ]
    s = summarize(rows, "digits")
    best = s["models"]["2L-ReLU"]["closest"]
    assert (best["estimator"], best["ridge"]) == ("kernel_loo", "objective:0.1")
    assert best["spearman"] == pytest.approx(0.6) and best["n_points"] == 80 and best["seeds"] == 2
    assert "kernel LOO objective:0.1" in s["headline"][0] and "resolved" in s["headline"][0]
    assert s["models"]["2L-ReLU"]["resolved"] is True


def test_summary_is_inconclusive_when_retraining_is_chaotic():
    """When another batch order does not reproduce the effects, ranking estimators
    against them is not a result."""
    base = {"model": "MLP-Attn", "n_points": 40, "seconds": 0.1, "seed": 0}
    rows = [
        {
            **base,
            "estimator": "kernel_loo",
            "ridge": "objective:0.1",
            "spearman": 0.4,
            "spearman_p": 0.01,
            "sign_agreement": 0.8,
        },
        {
            **base,
            "estimator": "retrain_other_order",
            "ridge": "",
            "spearman": -0.5,
            "spearman_p": 0.001,
            "sign_agreement": 0.4,
        },
    ]
    s = summarize(rows, "digits")
    assert (
        s["models"]["MLP-Attn"]["resolved"] is False and s["models"]["MLP-Attn"]["closest"] is None
    )
    assert s["headline"][0].startswith("MLP-Attn: INCONCLUSIVE")


def test_rows_carry_the_guards_and_the_summary_marks_unconverged_models():
    base = {
        "model": "MLP-Attn",
        "n_points": 40,
        "seconds": 0.1,
        "seed": 0,
        "width": 256,
        "converged": False,
        "above_chance": True,
    }
    rows = [
        {
            **base,
            "estimator": "kernel_loo",
            "ridge": "objective:0.1",
            "spearman": 0.6,
            "spearman_p": 1e-4,
            "sign_agreement": 0.8,
        },
        {
            **base,
            "estimator": "retrain_other_order",
            "ridge": "",
            "spearman": 0.9,
            "spearman_p": 1e-9,
            "sign_agreement": 1.0,
        },
    ]
    s = summarize(rows, "digits")
    assert "not converged in 1 of 1 cell" in s["headline"][0] and "not results" in s["headline"][0]
    assert s["failed_guards"]["not converged"]["MLP-Attn"] == ["m=256 seed=0"]
    ok = summarize([{**r, "converged": True} for r in rows], "digits")
    assert "⚠" not in ok["headline"][0] and not ok["failed_guards"]


def test_a_finished_run_reads_back(tmp_path):
    """The run directory of an influence_check run is not 'damaged' when reopened: its
    context and estimator columns are labels (engine.results.tables.InfluenceCheckRow)."""
    from engine.results.tables import InfluenceCheckRow
    from engine.run.runs import read_run

    events, out = _run(_spec(gradient=(), ridges=("lambda",)), tmp_path)
    data = read_run(out)
    assert data["damage"] == []
    rows = [InfluenceCheckRow.from_row(r) for r in data["tables"]["influence_check"]]
    live = [e.row for e in events if isinstance(e, TableRow) and e.table == "influence_check"]
    assert [(r.model, r.estimator, r.context) for r in rows] == [
        (r["model"], r["estimator"], r["context"]) for r in live
    ]


@pytest.mark.parametrize("transductive", [False, True])
def test_batched_retraining_gives_the_separate_rows(tmp_path, transductive):
    """train.batch_networks > 1 trains every retraining of a cell side by side: the true
    effects (the artifact's scores) equal the separate path's to 1e-12 in float64, and the
    rows are the same but for their seconds."""
    import math

    spec = _spec(random=4)
    spec = spec.replace(data__transductive=transductive)

    def rows_and_scores(batch_networks: int, sub: str):
        sp = spec.replace(train__batch_networks=batch_networks)
        events, _ = _run(sp, tmp_path / sub)
        rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "influence_check"]
        arts = [
            e.data for e in events if isinstance(e, Artifact) and e.name == "influence_check_scores"
        ]
        return rows, arts

    sep_rows, sep_arts = rows_and_scores(1, "separate")
    bat_rows, bat_arts = rows_and_scores(5, "batched")  # 2 × 8 networks: chunks of 5
    assert len(sep_arts) == len(bat_arts) == 2
    for a, b in zip(sep_arts, bat_arts):
        assert a["indices"] == b["indices"]
        for key in ("retrain", "retrain_other_order"):
            assert b["scores"][key] == pytest.approx(a["scores"][key], rel=1e-12, abs=1e-15)
        assert max(abs(v) for v in a["scores"]["retrain"]) > 1e-6  # effects, not zeros
    assert len(sep_rows) == len(bat_rows)
    for r, s in zip(sep_rows, bat_rows):
        for k, v in r.items():
            if k == "seconds":
                continue
            if isinstance(v, float) and math.isnan(v):
                assert math.isnan(s[k])
            else:
                assert s[k] == pytest.approx(v, rel=1e-12), k


def test_the_truths_are_compared_only_when_both_are_resolved():
    """The PBRF against retraining: agree at ρ ≥ 0.9, DISAGREE below; but when
    retraining's own floor does not resolve it (another batch order unrelated), the
    disagreement is that noise, not a finding: "cannot be compared", agree None."""

    def rows(floor_rho: float, floor_p: float, pbrf_rho: float) -> list[dict]:
        base = {"model": "MLP-Attn", "n_points": 40, "seconds": 0.1, "seed": 0, "ridge": ""}
        return [
            {**base, "truth": "pbrf", "estimator": "pbrf_more_steps", "spearman": 1.0,
             "spearman_p": 1e-12, "sign_agreement": 1.0},
            {**base, "truth": "retrain", "estimator": "retrain_other_order",
             "spearman": floor_rho, "spearman_p": floor_p, "sign_agreement": 0.5},
            {**base, "truth": "retrain", "estimator": "pbrf", "spearman": pbrf_rho,
             "spearman_p": 0.01, "sign_agreement": 0.6},
        ]  # fmt: skip

    def verdict(s: dict) -> tuple[object, str]:
        line = next(h for h in s["headline"] if "the two truths" in h)
        return s["models"]["MLP-Attn"]["truths_agree"]["agree"], line

    agree, line = verdict(summarize(rows(0.95, 1e-9, 0.93), "digits"))
    assert agree is True and "the two truths agree" in line
    agree, line = verdict(summarize(rows(0.95, 1e-9, 0.4), "digits"))
    assert agree is False and "the two truths DISAGREE" in line
    agree, line = verdict(summarize(rows(0.31, 0.2, 0.4), "digits"))
    assert agree is None and "cannot be compared (retraining does not resolve" in line


def test_an_unconverged_pbrf_is_said(tmp_path):
    """A PBRF that did not reach ``pbrf_tol`` is a warning naming its gradient norm (a
    tolerance below round-off: the active set reaches ≈ 1e-13, not 1e-18); one that did
    (a tolerance met at the start) is not."""
    spec = _spec(truth="pbrf", gradient=(), noise_floor=False, pbrf_steps=1, pbrf_tol=1e-18)
    events, _ = _run(spec.replace(model__kinds=("relu",)), tmp_path / "a")
    said = [e.message for e in events if isinstance(e, Log) and "did not converge" in e.message]
    assert len(said) == 1 and "in 1 steps" in said[0] and "tolerance 1e-18" in said[0]
    spec = _spec(truth="pbrf", gradient=(), noise_floor=False, pbrf_steps=1, pbrf_tol=1.0)
    events, _ = _run(spec.replace(model__kinds=("relu",)), tmp_path / "b")
    assert not [e for e in events if isinstance(e, Log) and "did not converge" in e.message]
    rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "influence_check"]
    assert rows and all(r["truth_converged"] is True for r in rows)


def test_an_unconverged_pbrf_is_never_resolved():
    """The floor (twice the steps) agreeing with an unconverged PBRF is the solver's
    drift: the summary names the closest estimator but not "resolved", and does not
    compare the truths; the same rows with the tolerance met are resolved."""

    def rows(conv: bool) -> list[dict]:
        base = {
            "model": "2L-ReLU",
            "n_points": 40,
            "seconds": 0.1,
            "ridge": "",
            "truth": "pbrf",
            "truth_converged": conv,
            "spearman_p": 1e-12,
        }
        out = []
        for seed in (0, 1):
            out += [
                {
                    **base,
                    "seed": seed,
                    "estimator": "pbrf_more_steps",
                    "spearman": 1.0,
                    "sign_agreement": 1.0,
                },
                {
                    **base,
                    "seed": seed,
                    "estimator": "gradient_exact",
                    "ridge": "lambda:0.001",
                    "spearman": 0.97,
                    "sign_agreement": 0.98,
                },
                {
                    **base,
                    "seed": seed,
                    "truth": "retrain",
                    "truth_converged": None,
                    "estimator": "retrain_other_order",
                    "spearman": 0.9,
                    "sign_agreement": 0.9,
                },
                {
                    **base,
                    "seed": seed,
                    "truth": "retrain",
                    "truth_converged": None,
                    "estimator": "pbrf",
                    "spearman": 0.95,
                    "sign_agreement": 0.9,
                },
            ]
        return out  # fmt: skip

    s = summarize(rows(False), "mnist")
    m = s["models"]["2L-ReLU"]["truths"]["pbrf"]
    assert m["resolved"] is None and m["converged"] is False
    assert m["closest"]["estimator"] == "gradient_exact"
    head = s["headline"][0]
    assert "DID NOT CONVERGE" in head and "2 of 2 seeds" in head and "resolved:" not in head
    assert s["models"]["2L-ReLU"]["truths_agree"]["agree"] is None
    assert any("did not converge" in h and "cannot be compared" in h for h in s["headline"])
    s = summarize(rows(True), "mnist")
    m = s["models"]["2L-ReLU"]["truths"]["pbrf"]
    assert m["resolved"] is True and m["converged"] is True
    assert "the PBRF resolved" in s["headline"][0]
    assert s["models"]["2L-ReLU"]["truths_agree"]["agree"] is True
