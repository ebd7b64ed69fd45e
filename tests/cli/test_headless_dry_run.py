"""``malleability headless --dry-run``: the estimate per experiment, and no run directory."""

from __future__ import annotations

from typer.testing import CliRunner

from malleability_tui.cli.main import app


def test_dry_run_prints_the_estimate_and_runs_nothing(tmp_path):
    out, cfg = tmp_path / "run", tmp_path / "spec.toml"
    cfg.write_text("[kappa]\nn_train = 100\nn_test = 40\n")  # digits has 174 eights
    args = ["headless", "--dataset", "digits", "--classes", "3,8", "--experiment", "kappa_sweep"]
    args += ["--config", str(cfg)]
    res = CliRunner().invoke(app, [*args, "--dry-run", "--out", str(out)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("kappa_sweep: ≈ ") and "fused" in lines[0]
    assert lines[-1].startswith("estimated run time ≈ ")
    assert all(len(ln) <= 80 for ln in lines) and not out.exists()
