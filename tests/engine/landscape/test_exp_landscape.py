"""The ``landscape`` experiment end to end on a tiny built-in data set, and its summary."""

from __future__ import annotations

import math

import pytest

from engine.experiments import run
from engine.experiments.landscape import summarize
from engine.run.events import Artifact, Failed, Summary, TableRow
from engine.run.runs import read_run
from engine.run.spec import DataSpec, LandscapeSpec, ModelSpec, RunSpec, TrainSpec
from engine.run.store import TABLE_COLUMNS, RunStore


def _spec(split: str, classes, seeds: tuple[int, ...]) -> RunSpec:
    return RunSpec(
        experiment="landscape",
        data=DataSpec(name="digits", classes=classes, n_train=30, n_test=12),
        model=ModelSpec(kinds=("relu", "attn"), widths=(8,)),
        train=TrainSpec(epochs=2, batch_size=15),
        landscape=LandscapeSpec(
            width=8,
            points_1d=5,
            points_2d=3,
            span=0.5,
            split=split,
            hessian_iters=10,
            hutchinson_samples=4,
        ),
        seeds=seeds,
        device="cpu",
        dtype="float64",
    )


@pytest.mark.parametrize(
    ("split", "classes", "seeds"), [("both", (3, 8), (0, 1)), ("train", None, (0,))]
)
def test_landscape_experiment_tables(tmp_path, split, classes, seeds) -> None:
    spec = _spec(split, classes, seeds)
    store = RunStore(tmp_path / "run", spec)
    events = []
    for ev in run(spec):
        store.write(ev)
        events.append(ev)
    store.close("finished")
    assert not [e for e in events if isinstance(e, Failed)]
    land = [e.row for e in events if isinstance(e, TableRow) and e.table == "landscape"]
    sharp = [e.row for e in events if isinstance(e, TableRow) and e.table == "sharpness"]
    assert all(tuple(r) == TABLE_COLUMNS["landscape"] for r in land)
    assert all(tuple(r) == TABLE_COLUMNS["sharpness"] for r in sharp)
    splits = ("train", "test") if split == "both" else ("train",)
    labels = {"1d": 5, "2d": 9, "interp": 4 * 1 + 1 + 2 * 1}  # interp: 5 on [0, 1] + 1 each side
    want = {
        (m, lab + (f":{s}" if split == "both" else "")): k
        for m in ("2L-ReLU", "MLP-Attn")
        for lab, k in labels.items()
        for s in splits
    }
    got: dict[tuple[str, str], int] = {}
    for r in land:
        got[(r["model"], r["direction"])] = got.get((r["model"], r["direction"]), 0) + 1
        assert math.isnan(r["beta"]) == (not r["direction"].startswith("2d"))  # no β: NaN
        assert math.isfinite(r["loss"]) and r["loss"] >= 0
    assert got == want  # first seed only
    assert sorted((r["model"], r["seed"]) for r in sharp) == [
        (m, s) for m in ("2L-ReLU", "MLP-Attn") for s in seeds
    ]
    assert all(r["hessian_top_eig"] > 0 and r["hessian_trace"] > 0 for r in sharp)
    arts = [e for e in events if isinstance(e, Artifact) and e.name == "landscape_2d"]
    assert len(arts) == 2 * len(seeds) * len(splits) and arts[0].data["losses"].shape == (3, 3)
    (summ,) = [e.data for e in events if isinstance(e, Summary) and e.section == "landscape"]
    for m in ("2L-ReLU", "MLP-Attn"):
        eig = [r["hessian_top_eig"] for r in sharp if r["model"] == m]
        assert abs(summ["models"][m]["hessian_top_eig"]["mean"] - sum(eig) / len(seeds)) < 1e-12
        t = summ["models"][m]["interp_min_t"]["mean"]  # on the 5-point grid over [−0.25, 1.25]
        assert t in (-0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25)
        assert "not converged" in summ["models"][m]["guards"]  # 2 epochs cannot tell
    assert all(r["converged"] is False for r in sharp)
    assert summ["failed_guards"]["not converged"]["2L-ReLU"] == [f"seed={s}" for s in seeds]
    assert all("⚠ " in line for line in summ["headline"])
    f = summ["flatter"]["hessian_top_eig"]
    ma = summ["models"]["MLP-Attn"]["hessian_top_eig"]["mean"]
    mr = summ["models"]["2L-ReLU"]["hessian_top_eig"]["mean"]
    assert f["flatter"] == ("MLP-Attn" if ma < mr else "2L-ReLU")
    assert abs(f["ratio"] - max(ma, mr) / min(ma, mr)) < 1e-12
    disk = read_run(tmp_path / "run")
    assert len(disk["tables"]["landscape"]) == len(land) and len(
        disk["tables"]["sharpness"]
    ) == len(sharp)
    one = [r for r in disk["tables"]["landscape"] if r["direction"].startswith("1d")]
    assert all(r["beta"] == "" for r in one)  # an empty CSV cell


def test_summarize_ratios_and_verdict() -> None:
    def res(model, seed, eig, tr, w):
        return {
            "model": model,
            "seed": seed,
            "hessian_top_eig": eig,
            "hessian_trace": tr,
            "width_1d": w,
            "eig_converged": True,
            "train_loss": 0.1,
        }

    rows = [
        res("2L-ReLU", 0, 4.0, 40.0, 0.5),
        res("MLP-Attn", 0, 1.0, 10.0, 1.0),
        res("2L-ReLU", 1, 6.0, 60.0, 0.5),
        res("MLP-Attn", 1, 2.0, 30.0, 2.0),
    ]
    s = summarize(rows, "toy", 8)
    assert s["flatter_model"] == "MLP-Attn"
    e = s["flatter"]["hessian_top_eig"]
    assert e["flatter"] == "MLP-Attn" and abs(e["ratio"] - 5.0 / 1.5) < 1e-12
    assert abs(e["attn_flatter_ratio_per_seed"]["mean"] - 3.5) < 1e-12  # (4/1 + 6/2)/2
    assert abs(e["attn_flatter_ratio_per_seed"]["std"] - math.sqrt(0.5)) < 1e-12
    w = s["flatter"]["width_1d"]
    assert w["flatter"] == "MLP-Attn" and abs(w["ratio"] - 3.0) < 1e-12
    rows[1]["width_1d"] = rows[3]["width_1d"] = 0.1
    assert summarize(rows, "toy", 8)["flatter_model"] == "mixed"
    for r in rows:  # a tie (both curves under the threshold on the whole grid) is no verdict
        r["width_1d"] = 2.0
    tied = summarize(rows, "toy", 8)
    assert tied["flatter"]["width_1d"]["flatter"] == "tie" and tied["flatter_model"] == "MLP-Attn"
