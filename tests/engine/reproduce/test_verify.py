"""The continuation check (engine/reproduce/verify.py) on hand-made rows: which cells it
samples, how the continued rows replace them, when a verdict or a number has moved."""

from __future__ import annotations

import math
from pathlib import Path

from engine.reproduce.claims import checklist
from engine.reproduce.plan import plan
from engine.reproduce.verify import sampled, substitute, verdicts_moved, verify_part


def _sharp(widths: dict[tuple[str, int], float], bad: tuple = ()) -> list[dict]:
    return [
        {
            "model": m,
            "seed": str(s),
            "hessian_top_eig": "1.0",
            "width_1d": str(w),
            "width_delta": "0.1",
            "width_censored": "False",
            "converged": str((m, s) not in bad),
            "above_chance": "True",
        }
        for (m, s), w in widths.items()
    ]


BEFORE = {("MLP-Attn", s): 0.8 + 0.01 * s for s in (0, 1, 2)} | {
    ("2L-ReLU", s): 0.3 + 0.01 * s for s in (0, 1, 2)
}


def test_sample_is_the_seed_with_most_passing_cells(tmp_path: Path) -> None:
    part = plan(("digits",), tables=(1,), quick=True)[0]
    rows = _sharp(BEFORE, bad=(("MLP-Attn", 0),))
    s = sampled(part, {"sharpness": rows}, {})
    assert (
        s is not None and s["seed"] == 1 and s["cells"] == {("MLP-Attn", None), ("2L-ReLU", None)}
    )
    assert s["epochs"] == max(part.spec.train.epochs, part.spec.train.max_epochs)  # no curves
    curves = {
        "train/digits/attn/256/1": ([10.0, 430.0], [1.0, 0.1]),
        "train/digits/relu/256/1": ([10.0, 610.0], [1.0, 0.1]),
        "train/digits/relu/256/0": ([10.0, 900.0], [1.0, 0.1]),  # not the sampled seed
    }
    got = sampled(part, {"sharpness": rows}, curves)
    assert got is not None and got["epochs"] == 610
    # an interrupted check's continuation run keeps its epochs when the curves are gone
    (tmp_path / "spec.toml").write_text(verify_part(part, got).spec.to_toml())
    again = sampled(part, {"sharpness": rows}, {}, tmp_path)
    assert again is not None and again["epochs"] == 610
    vp = verify_part(part, s)
    assert vp.spec.seeds == (1,) and vp.spec.train.until == "fixed"
    assert vp.spec.train.epochs == 2 * s["epochs"] and "spectrum" not in vp.spec.experiment
    none = sampled(part, {"sharpness": _sharp(BEFORE, bad=tuple(BEFORE))}, {})
    assert none is None  # no converged cell: nothing to continue


def _check(after_widths: dict) -> dict:
    rows = _sharp(BEFORE)
    s = {"seed": 1, "cells": {("MLP-Attn", None), ("2L-ReLU", None)}, "epochs": 100}
    new = substitute({"sharpness": rows}, {"sharpness": _sharp(after_widths)}, s)
    assert len(new["sharpness"]) == 6  # seed 1's two rows replaced, not added
    before = checklist({("digits", "paper"): {"sharpness": rows}})
    after = checklist({("digits", "paper"): {"sharpness": new["sharpness"]}})
    info = {("digits", "paper"): {"parts": {"digits-multiclass": {"seed": 1}}}}
    stats = ({("digits", "paper"): {"sharpness": rows}}, {("digits", "paper"): new})
    verdicts_moved(before, after, stats[0], stats[1], info)
    return next(i for i in before if i["claim"] == 6)["verify"]


def test_a_stable_verdict_and_a_moved_one() -> None:
    same = _check({("MLP-Attn", 1): 0.81, ("2L-ReLU", 1): 0.31})
    assert same["moved"] is False and same["before"] == same["after"] == "holds"
    # the continued MLP-Attn basin shrinks below 2L-ReLU's: the verdict and its number move
    moved = _check({("MLP-Attn", 1): 0.1, ("2L-ReLU", 1): 0.31})
    assert moved["moved"] is True and moved["after"] != "holds"
    b, lo, hi, a = moved["numbers"]["MLP-Attn width_1d"]
    assert lo <= b <= hi and not lo <= a <= hi


def _ntk(lin: bool, bad: tuple = (), value: float = 0.5) -> list[dict]:
    """Claim 1's rows: 2L-ReLU's distance falls with width, MLP-Attn's does not."""
    rows = []
    for m in ("2L-ReLU", "MLP-Attn"):
        for i, w in enumerate((16, 64, 256, 1024, 4096)):
            for s in (0, 1, 2):
                d = 1.0 / (i + 1) if m == "2L-ReLU" else value + 0.01 * s
                rows.append(
                    {
                        "model": m,
                        "width": str(w),
                        "seed": str(s),
                        "ntk_distance": str(d),
                        "lin_distance_rel": str(d) if lin else "",
                        "converged": str((m, w, s) not in bad),
                        "above_chance": "True",
                    }
                )
    return rows


def _claim1_check(before_rows: list[dict], after_rows: list[dict]) -> dict:
    key = ("digits", "paper")
    before = checklist({key: {"ntk": before_rows}})
    after = checklist({key: {"ntk": after_rows}})
    info = {key: {"parts": {"digits-multiclass": {"seed": 1}}}}
    verdicts_moved(before, after, {key: {"ntk": before_rows}}, {key: {"ntk": after_rows}}, info)
    return next(i for i in before if i["claim"] == 1 and not i.get("sweep"))["verify"]


def test_claim1_numbers_read_the_column_the_verdict_read() -> None:
    """A run without the linearized twin is decided on ntk_distance; its numbers are
    too, so an unchanged run is stable, not 'moved' by NaN against NaN."""
    got = _claim1_check(_ntk(lin=False), _ntk(lin=False))
    assert got["numbers"] and all(math.isfinite(v[0]) for v in got["numbers"].values())
    assert got["moved"] is False


def test_claim1_numbers_rest_on_the_cells_that_pass_the_guards() -> None:
    """An unconverged cell is left out of the numbers as it is of the verdict: its value
    (far off) neither widens the interval nor moves the mean."""
    bad = (("MLP-Attn", 256, 0),)
    rows = _ntk(lin=True, bad=bad)
    for r in rows:
        if (r["model"], r["width"], r["seed"]) == ("MLP-Attn", "256", "0"):
            r["lin_distance_rel"] = r["ntk_distance"] = "50.0"
    got = _claim1_check(rows, rows)
    b, lo, hi, _ = got["numbers"]["MLP-Attn m=256"]
    assert abs(b - 0.515) < 1e-9 and hi < 1.0  # seeds 1 and 2: 0.51, 0.52
