"""QKV-Attn through the experiments: ntk (f_NTK columns empty, drift from its eNTK), d_k sweep."""

from __future__ import annotations

import csv
import math

import pytest

from engine.errors import ConfigError
from engine.experiments import run
from engine.experiments.ntk import NO_ANALYTIC
from engine.run.events import Failed, Summary, TableRow
from engine.run.spec import DataSpec, ModelSpec, NTKSpec, QKVSpec, RunSpec, TrainSpec
from engine.run.store import RunStore


def _spec(experiment: str, **kw) -> RunSpec:
    return RunSpec(
        experiment=experiment,
        data=DataSpec(name="digits", classes=(3, 8), n_train=30, n_test=12),
        model=ModelSpec(kinds=("relu", "qkv"), widths=(8, 32)),
        train=TrainSpec(epochs=2, batch_size=15),
        ntk=NTKSpec(drift_every=1, drift_points=10),
        seeds=(0,),
        device="cpu",
        dtype="float64",
        **kw,
    )


def _run(spec: RunSpec, tmp_path) -> list:
    store = RunStore(tmp_path / "run", spec)
    events = []
    for ev in run(spec):
        store.write(ev)
        events.append(ev)
    store.close("finished")
    failed = [e for e in events if isinstance(e, Failed)]
    assert not failed, failed
    return events


def test_ntk_rows_for_qkv_leave_f_ntk_empty(tmp_path) -> None:
    spec = _spec("ntk", qkv=QKVSpec(dk_sweep=(4, 16)))
    events = _run(spec, tmp_path)
    rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "ntk_distance"]
    qkv = [r for r in rows if r["model"] == "QKV-Attn"]
    relu = [r for r in rows if r["model"] == "2L-ReLU"]
    assert len(qkv) == 2 and len(relu) == 2
    for r in qkv:
        for k in (
            "ntk_distance",
            "ntk_distance_rel",
            "kernel_distance_init",
            "kernel_distance_final",
        ):
            assert math.isnan(r[k])
        assert math.isfinite(r["kernel_drift"]) and r["kernel_drift"] > 0
    for r in relu:
        assert math.isfinite(r["ntk_distance"])
    with open(tmp_path / "run" / "ntk_distance.csv", newline="") as fh:
        on_disk = [r for r in csv.DictReader(fh) if r["model"] == "QKV-Attn"]
    assert on_disk and all(
        r["ntk_distance"] == "" and r["kernel_distance_init"] == "" for r in on_disk
    )
    assert all(float(r["kernel_drift"]) > 0 for r in on_disk)
    summary = next(e.data for e in events if isinstance(e, Summary) and e.section == "ntk")
    assert summary["models"]["QKV-Attn"]["f_ntk"] == NO_ANALYTIC
    assert any(NO_ANALYTIC in line for line in summary["headline"])
    qkv_entry = summary["models"]["QKV-Attn"]
    if any("lin_distance_rel" in r for r in qkv):  # the linearized twin (issue 12)
        assert all(math.isfinite(r["lin_distance_rel"]) for r in qkv)
        assert len(qkv_entry["mean_lin_distance_rel"]) == 2
    else:
        assert "not available" in qkv_entry["lin_distance"]
    dk = [e.row for e in events if isinstance(e, TableRow) and e.table == "qkv_dk"]
    assert [r["d_k"] for r in dk] == [4, 16] and all(r["width"] == 32 for r in dk)
    assert all(math.isfinite(r["kernel_drift"]) for r in dk)


@pytest.mark.parametrize("experiment", ["train", "landscape", "flip"])
def test_other_experiments_accept_qkv(tmp_path, experiment) -> None:
    spec = _spec(experiment, qkv=QKVSpec(d_k=8)).replace(
        landscape__width=8,
        landscape__points_1d=3,
        landscape__points_2d=3,
        landscape__hessian_iters=3,
        landscape__hutchinson_samples=2,
        flip__width=8,
        flip__attacks=("fgsm", "pgd"),
        flip__pgd_steps=2,
        flip__top_frac=0.2,
    )
    events = _run(spec, tmp_path)
    rows = [e.row for e in events if isinstance(e, TableRow)]
    assert any(r.get("model") == "QKV-Attn" for r in rows)
    if experiment == "flip":
        for r in rows:
            if r["model"] == "QKV-Attn":
                assert 0 <= r["flip_rate"] <= 1 and r["n_selected"] == 6


def test_spec_accepts_qkv_and_rejects_bad_options() -> None:
    spec = RunSpec.from_toml(_spec("ntk", qkv=QKVSpec(d_k=8, dk_sweep=(16, 4))).to_toml())
    assert (
        spec.model.kinds == ("relu", "qkv") and spec.qkv.d_k == 8 and spec.qkv.dk_sweep == (4, 16)
    )
    with pytest.raises(ConfigError, match="qkv.d_k"):
        QKVSpec(d_k=-1)
    with pytest.raises(ConfigError, match="qkv.dk_sweep"):
        QKVSpec(dk_sweep=(0,))
    with pytest.raises(ConfigError, match="relu, attn, qkv"):
        ModelSpec(kinds=("transformer",))


def test_model_kinds_agree() -> None:
    from engine.models import MODEL_KINDS, MODEL_LABELS
    from engine.run.spec import training as spec_mod  # ModelSpec's module checks kinds

    assert spec_mod.MODEL_KINDS == MODEL_KINDS == tuple(MODEL_LABELS)


def test_spectrum_adds_qkv_entk_and_g3(tmp_path) -> None:
    spec = _spec("spectrum").replace(model__widths=(16,))
    events = _run(spec, tmp_path)
    rows = {
        e.row["kernel"]: e.row
        for e in events
        if isinstance(e, TableRow) and e.table == "ntk_spectrum"
    }
    assert {"ntk_raw", "ntk_attn", "entk_qkv_init", "gram_G3"} <= set(rows)
    assert rows["entk_qkv_init"]["kappa"] > 1 and rows["gram_G3"]["lambda_max"] > 0


def test_tui_names_the_third_model() -> None:
    from malleability_tui.views.sweep import sweep_series
    from malleability_tui.views.training import cell_label
    from malleability_tui.widgets.sweep_panel import COLORS

    rows = [
        {"model": "QKV-Attn", "width": 16, "kernel_drift": 0.5},
        {"model": "QKV-Attn", "width": 64, "kernel_drift": 0.7},
    ]
    ws, mean, _, n = sweep_series(rows, "kernel_drift")["QKV-Attn"]
    assert ws == [16, 64] and mean == [0.5, 0.7] and n == [1, 1]
    assert cell_label("train/digits/qkv/64/0").startswith("QKV-Attn m=64")
    assert COLORS["QKV-Attn"] not in (COLORS["2L-ReLU"], COLORS["MLP-Attn"])


def _lin_rows(relu_slope: float, qkv_slope: float, widths=(4, 16, 64, 256)) -> list[dict]:
    """ntk_distance rows as read from CSV (strings); QKV-Attn's f_NTK columns empty."""
    rows = []
    for seed in (0, 1):
        for i, w in enumerate(widths):
            for model, s in (("2L-ReLU", relu_slope), ("QKV-Attn", qkv_slope)):
                rows.append(
                    {
                        "model": model,
                        "width": str(w),
                        "seed": str(seed),
                        "ntk_distance": "" if model == "QKV-Attn" else "1.0",
                        "lin_distance_rel": str(1 + s * i + 0.01 * seed),
                    }
                )
    return rows


def test_reproduce_v2_row_uses_the_claim1_rule_on_the_twin_distance() -> None:
    from engine.reproduce.claims import FAILS, HOLDS, INCONCLUSIVE, NO_DATA, checklist

    def v2(rows):
        return next(c for c in checklist({"mnist": {"ntk": rows}}) if c["claim"] == 7)

    assert v2(_lin_rows(-0.1, 0.1))["verdict"] == HOLDS
    assert v2(_lin_rows(-0.1, -0.1))["verdict"] == FAILS  # both approach their twins
    assert v2(_lin_rows(0.1, 0.1))["verdict"] == FAILS
    assert v2(_lin_rows(-0.1, 0.1, widths=(4, 16, 64)))["verdict"] == INCONCLUSIVE
    no_twin = [{**r, "lin_distance_rel": ""} for r in _lin_rows(-0.1, 0.1)]
    assert "not available" in v2(no_twin)["statistic"] and v2(no_twin)["verdict"] == NO_DATA
    no_qkv = [r for r in _lin_rows(-0.1, 0.1) if r["model"] != "QKV-Attn"]
    assert v2(no_qkv)["verdict"] == NO_DATA
