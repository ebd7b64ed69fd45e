"""Resuming a finished run leaves every number of summary.json unchanged (#13)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from malleability_tui.cli.main import app

SPEC = """
experiment = "train,spectrum,ntk,flip,landscape,influence_check"
seeds = [0, 1]
device = "cpu"
dtype = "float64"
[data]
name = "digits"
classes = [3, 8]
n_train = 40
n_test = 16
[model]
widths = [8, 16]
[train]
epochs = 3
batch_size = 20
[ntk]
drift_every = 0
[flip]
attacks = ["fgsm"]
width = 8
[landscape]
width = 8
points_1d = 5
points_2d = 3
hessian_iters = 5
hutchinson_samples = 3
[influence_check]
n_train = 30
n_test = 10
width = 8
top = 2
random = 2
gradient = ["exact"]
"""


def _summary(out: Path) -> dict:
    s = json.loads((out / "summary.json").read_text())
    return {k: v for k, v in s.items() if isinstance(v, dict) and k != "timing"}


def test_resume_of_a_finished_run_keeps_every_summary_number(tmp_path: Path) -> None:
    cfg = tmp_path / "spec.toml"
    cfg.write_text(SPEC)
    out = tmp_path / "run"
    runner = CliRunner()
    first = runner.invoke(
        app,
        ["headless", "--config", str(cfg), "--out", str(out), "--quiet"],
        catch_exceptions=False,
    )
    assert first.exit_code == 0, first.output
    before = _summary(out)
    assert {"train", "spectrum", "ntk", "flip", "landscape", "influence_check"} <= set(before)
    again = runner.invoke(
        app, ["headless", "--resume", "--out", str(out), "--quiet"], catch_exceptions=False
    )
    assert again.exit_code == 0, again.output
    after = _summary(out)
    assert after == before
