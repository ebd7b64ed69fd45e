"""The PBRF truth's converged-points filter (engine.experiments.influence_check_pbrf): a
point whose solve missed ``pbrf_tol`` never enters a statistic, is counted and named with
its reason on the rows, and the summary says how many points converged per seed."""

from __future__ import annotations

import dataclasses
import math

import torch

import engine.experiments.influence_check_pbrf as icp
from engine.experiments.influence_check import summarize
from engine.influence.pbrf import PBRFResult
from engine.influence.retrain import agreement
from engine.run.events import Artifact, TableRow
from tests.engine.experiments.test_influence_check import _run, _spec


def _result(gn: list[float], failures: tuple[str, ...] = ()) -> PBRFResult:
    eff = torch.arange(3 * len(gn), dtype=torch.float64).reshape(3, len(gn))
    return PBRFResult(eff, torch.tensor(gn, dtype=torch.float64), 5, 1e-6, failures=failures)


def test_a_point_is_kept_only_when_the_truth_and_its_floor_converged():
    truth = _result([1e-9, 2e-6, math.inf, 1e-12], ("", "", "kink state did not settle", ""))
    floor = _result([1e-9, 1e-9, 1e-9, math.nan])
    keep, reasons = icp.combine([truth, floor])
    assert keep.tolist() == [True, False, False, False]
    assert reasons[0] == ""
    assert reasons[1] == "gradient norm 2.0e-06 > tol 1e-06"
    assert reasons[2] == "kink state did not settle"
    assert reasons[3].startswith("floor (twice the steps): gradient norm nan")
    (cols,) = icp.judged_columns(keep, truth.effects)
    assert torch.equal(cols, truth.effects[:, :1])


def test_a_forced_unconverged_point_is_excluded_and_counted(tmp_path, monkeypatch):
    """The real solve, then one point's truth marked unconverged and its effects made
    huge: the rows compare the other points only (the same ρ as the estimator against
    those columns), count it in ``n_dropped`` and name it with its reason."""
    real = icp.pbrf_truth
    seen = {}

    def forced(*args, **kw):
        res, secs = real(*args, **kw)
        gn = res.early.grad_norm.clone()
        gn[2] = math.inf  # point 2 of the truth (the checkpoint) did not converge
        eff = res.early.effects.clone()
        eff[:, 2] = 1e6  # a value that would dominate any statistic it entered
        fail = tuple("forced for the test" if j == 2 else "" for j in range(gn.numel()))
        early = dataclasses.replace(res.early, grad_norm=gn, effects=eff, failures=fail)
        res = dataclasses.replace(res, early=early, grad_norm=torch.zeros_like(gn))
        seen["truth"] = eff
        return res, secs

    monkeypatch.setattr(icp, "pbrf_truth", forced)
    spec = _spec(truth="pbrf", gradient=("exact",), pbrf_min_points=4, pbrf_tol=1.0)
    events, _ = _run(spec.replace(model__kinds=("relu",)), tmp_path)
    rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "influence_check"]
    assert rows and all(r["n_dropped"] == 1 and r["n_points"] == 5 for r in rows)
    art = next(e for e in events if isinstance(e, Artifact) and e.name == "influence_check_scores")
    idx = art.data["indices"]
    assert all(r["dropped"] == f"{idx[2]}: forced for the test" for r in rows)
    assert all(r["truth_converged"] is True for r in rows)  # 5 ≥ pbrf_min_points 4
    assert art.data["pbrf"]["kept"] == [True, True, False, True, True, True]
    # the floor's ρ is the agreement on the five kept columns, bit for bit
    keep = torch.tensor(art.data["pbrf"]["kept"])
    floor = next(r for r in rows if r["estimator"] == "pbrf_more_steps")
    scores = torch.tensor(art.data["scores"]["pbrf_more_steps"], dtype=torch.float64)[None]
    truth = seen["truth"].mean(0, keepdim=True)
    assert floor["spearman"] == agreement(scores[:, keep], truth[:, keep]).spearman
    s = summarize(rows, "digits")
    head = s["headline"]
    assert any("PBRF truth on 5/6 points converged (seed 0 5/6)" in h for h in head)
    assert any(f"seed 0: {idx[2]}: forced for the test" in h for h in head)


def test_too_few_converged_points_is_not_judged(tmp_path, monkeypatch):
    spec = _spec(truth="pbrf", gradient=(), pbrf_min_points=6, pbrf_tol=1.0)
    real = icp.pbrf_truth

    def forced(*args, **kw):
        res, secs = real(*args, **kw)
        gn = res.grad_norm.clone()
        gn[0] = math.inf
        return dataclasses.replace(res, grad_norm=gn), secs

    monkeypatch.setattr(icp, "pbrf_truth", forced)
    events, _ = _run(spec.replace(model__kinds=("relu",)), tmp_path)
    rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "influence_check"]
    assert rows and all(r["truth_converged"] is False and r["n_points"] == 5 for r in rows)
    assert all(
        r["dropped"].endswith("floor (twice the steps): gradient norm inf > tol 1") for r in rows
    )
    m = summarize(rows, "digits")["models"]["2L-ReLU"]
    assert m["resolved"] is None and m["seeds"] == {"0": None}
    assert m["converged_points"]["0"]["kept"] == 5


def _rows(kept: dict[int, int], floor_p: float = 1e-9) -> list[dict]:
    out = []
    for seed, k in kept.items():
        base = {
            "model": "2L-ReLU",
            "seed": seed,
            "truth": "pbrf",
            "seconds": 0.1,
            "ridge": "",
            "n_points": k,
            "n_dropped": 40 - k,
            "truth_converged": k >= 30,
            "dropped": "; ".join(f"{j}: kink state did not settle" for j in range(40 - k)),
        }
        out += [
            {
                **base,
                "estimator": "pbrf_more_steps",
                "spearman": 0.99,
                "spearman_p": floor_p,
                "sign_agreement": 1.0,
            },
            {
                **base,
                "estimator": "gradient_exact",
                "ridge": "lambda:0.001",
                "spearman": 0.9 if k >= 30 else -0.5,
                "spearman_p": 1e-6,
                "sign_agreement": 0.95,
            },
        ]
    return out  # fmt: skip


def test_the_summary_counts_converged_points_per_seed_and_judges_enough_ones():
    s = summarize(_rows({0: 40, 1: 38, 2: 40}), "mnist")
    m = s["models"]["2L-ReLU"]
    assert m["resolved"] is True and m["seeds"] == {"0": True, "1": True, "2": True}
    head = s["headline"]
    assert (
        "PBRF truth on 118/120 points converged (seed 0 40/40, seed 1 38/40, seed 2 40/40)"
        in head[0]
    )
    assert "the PBRF resolved" in head[0]
    assert head[1] == (
        "2L-ReLU: points left out of every PBRF statistic (their solve missed pbrf_tol): "
        "seed 1: 0: kink state did not settle; 1: kink state did not settle"
    )
    # seed 2 below pbrf_min_points: not judged (its ρ −0.5 leaves the table), not resolved
    s = summarize(_rows({0: 40, 1: 38, 2: 12}), "mnist")
    m = s["models"]["2L-ReLU"]
    assert m["resolved"] is None and m["seeds"] == {"0": True, "1": True, "2": None}
    assert m["closest"]["spearman"] == 0.9 and m["closest"]["seeds"] == 2
    assert "PBRF truth on 90/120 points converged" in s["headline"][0]
    assert "DID NOT CONVERGE on enough points in 1 of 3 seeds" in s["headline"][0]
    assert "judged on seed 0, 1 only" in s["headline"][0]
    # a judged seed whose floor is not significant: that seed is not resolved
    s = summarize(_rows({0: 40, 1: 40}, floor_p=0.2), "mnist")
    assert s["models"]["2L-ReLU"]["seeds"] == {"0": False, "1": False}
