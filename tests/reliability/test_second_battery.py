"""The second hostile battery (issue #29): damaged readers, spec bounds, resume after a
spec edit, numerics at degenerate inputs. Each one a clear one-line refusal or a correct
result, never an internal error."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from reliability_support import TINY, invoke, one_line_failure

from engine.experiments.landscape import summarize
from engine.run.validate import parse_json


def _copy(good_run: Path, sandbox: Path, name: str) -> Path:
    dst = sandbox / "runs" / name
    shutil.copytree(good_run, dst)
    return dst


def test_deeply_nested_summary_is_damage_and_the_other_runs_still_list(good_run, sandbox):
    _copy(good_run, sandbox, "ok")
    bad = _copy(good_run, sandbox, "deep")
    (bad / "summary.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    res = invoke("runs", "list")
    assert res.exit_code == 0, res.output
    assert "ok" in res.output and "damaged" in res.output and "nested deeper" in res.output
    res = invoke("runs", "show", str(bad))
    assert res.exit_code != 0 and "nested deeper than 64 levels" in one_line_failure(res)


def test_parse_json_bounds_depth_without_recursion():
    assert parse_json("[[[1]]]") == [[[1]]]
    with pytest.raises(ValueError, match="nested deeper"):
        parse_json("[" * 65 + "]" * 65)
    with pytest.raises(ValueError, match="nested deeper"):
        parse_json("[" * 200_000 + "]" * 200_000)


def test_resume_skips_an_undecodable_event_line(good_run, sandbox):
    run = _copy(good_run, sandbox, "ff")
    with open(run / "events.jsonl", "ab") as f:
        f.write(b"\xff\xfe not utf-8\n")
    res = invoke("headless", *TINY, "--out", str(run), "--resume")
    assert res.exit_code == 0, res.output


def test_resume_without_events_says_so(good_run, sandbox):
    run = _copy(good_run, sandbox, "noev")
    (run / "events.jsonl").unlink()
    res = invoke("headless", *TINY, "--out", str(run), "--resume")
    msg = one_line_failure(res)
    assert res.exit_code != 0 and "events.jsonl" in msg and "pass --resume" not in msg


def test_a_run_missing_only_spec_toml_is_listed_as_damaged(good_run, sandbox):
    run = _copy(good_run, sandbox, "nospec")
    (run / "spec.toml").unlink()
    res = invoke("runs", "list")
    assert res.exit_code == 0 and "nospec" in res.output and "spec.toml: missing" in res.output


def test_resume_refuses_an_edited_spec(good_run, sandbox):
    run = _copy(good_run, sandbox, "edited")
    spec = run / "spec.toml"
    spec.write_text(spec.read_text().replace("epochs = 2", "epochs = 7"))
    before = (run / "train.csv").read_text()
    res = invoke("headless", "--out", str(run), "--resume")
    msg = one_line_failure(res)
    assert res.exit_code != 0 and "train.epochs 2 → 7" in msg and "--out elsewhere" in msg
    assert (run / "train.csv").read_text() == before  # nothing lost


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ("[flip]\nwidth = 1000000000\n", "flip.width"),
        ("[landscape]\nwidth = 1000000000\n", "landscape.width"),
        ("[influence_check]\nwidth = 1000000000\n", "influence_check.width"),
        ("[qkv]\nd_k = 1000000000\n", "qkv.d_k"),
        ("[flip]\npgd_alpha = 1e300\n", "flip.pgd_alpha"),
        ("[flip]\nadv_alpha = 1e300\n", "flip.adv_alpha"),
        ("[landscape]\nspan = 1e30\n", "landscape.span"),
        ("seeds = [9223372036854775808]\n", "seeds"),
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", "TOML nested"),
    ],
)
def test_sizes_seeds_and_steps_are_bounded_where_parsed(sandbox, toml, field):
    cfg = sandbox / "c.toml"
    cfg.write_text(toml)
    res = invoke("headless", "--config", str(cfg), "--out", str(sandbox / "runs" / "x"))
    msg = one_line_failure(res)
    assert res.exit_code != 0 and field in msg and "internal error" not in msg
    assert not (sandbox / "runs" / "x").exists()


def test_a_utf8_bom_is_not_a_statement(sandbox):
    cfg = sandbox / "bom.toml"
    cfg.write_bytes("\ufeff[train]\nepochs = 3\n".encode())
    res = invoke("headless", "--config", str(cfg), "--save-config", str(sandbox / "o.toml"))
    assert res.exit_code == 0, res.output
    assert "epochs = 3" in (sandbox / "o.toml").read_text()


def test_landscape_summary_with_a_zero_hessian_eigenvalue():
    rows = [
        {
            "model": m,
            "seed": 0,
            "hessian_top_eig": 0.0,
            "hessian_trace": 0.0,
            "width_1d": 1.0,
            "eig_converged": True,
            "train_loss": 0.1,
        }
        for m in ("2L-ReLU", "MLP-Attn")
    ]
    rows[0]["hessian_top_eig"] = 2.0
    s = summarize(rows, "flat", 8)  # no ZeroDivisionError: the flat model's ratio is NaN
    e = s["flatter"]["hessian_top_eig"]
    assert e["flatter"] == "MLP-Attn" and math.isnan(e["ratio"])
