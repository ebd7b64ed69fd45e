"""`malleability results add|page` end to end on a tiny digits reproduction, and the
committed docs/results/index.md regenerated unchanged from the committed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.reproduce.page import page
from malleability_tui.cli.main import app

runner = CliRunner()
DOCS = Path(__file__).resolve().parents[2] / "docs" / "results"


def test_committed_page_is_generated_from_the_committed_files() -> None:
    assert page(DOCS) == (DOCS / "index.md").read_text(), (
        "docs/results/index.md differs from `malleability results page`'s output"
    )


@pytest.fixture(scope="module")
def repro_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("repro") / "digits"
    args = ["reproduce", "--dataset", "digits", "--quick", "--tables", "1", "--seeds", "0,1"]
    args += ["--widths", "8,16", "--epochs", "4", "--max-epochs", "4", "--device", "cpu"]
    args += ["--protocols", "paper,centred", "--out", str(out)]
    res = runner.invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.slow
def test_results_add_writes_the_layout_and_the_page(repro_run: Path, tmp_path: Path) -> None:
    repro = repro_run
    into = tmp_path / "results"
    res = runner.invoke(app, ["results", "add", str(repro), "--into", str(into)])
    assert res.exit_code == 0, res.output
    meta = json.loads((repro / "reproduce.json").read_text())
    for proto in ("paper", "centred"):
        folder = into / "digits" / proto
        check = json.loads((folder / "checklist.json").read_text())
        assert (check["dataset"], check["protocol"]) == ("digits", proto)
        items = check["checklist"]
        assert {i["claim"] for i in items} == {1, 2, 3, 4, 5, 6, 7}
        assert all(i["dataset"] == "digits" and i["protocol"] == proto for i in items)
        # 2 widths × 2 models × 2 seeds, trained 4 epochs: none converged, and it says so
        c1 = next(i for i in items if i["claim"] == 1 and not i.get("sweep", "").startswith("full"))
        assert c1["cells"] == {"table": "multiclass-ntk_distance.csv", "total": 8, "passing": 0}
        assert c1["verdict"].startswith("inconclusive")
        c6 = next(i for i in items if i["claim"] == 6)
        assert c6["measure"] == "width_1d" and c6["cells"]["total"] == 4
        for f in (
            "multiclass-ntk_distance.csv",
            "multiclass-sharpness.csv",
            "binary-gd-ntk_distance.csv",
        ):
            assert (folder / f).is_file(), f
        assert "width_1d" in (folder / "multiclass-sharpness.csv").read_text().splitlines()[0]
        run = json.loads((folder / "run.json").read_text())
        # the command this process ran (pytest's own under CliRunner), its commit and load
        assert run["command"] == meta["command"] and run["command"].startswith("malleability")
        assert run["seconds"] == meta["seconds"] > 0 and len(run["load_start"]) == 3
        figs = {p.name for p in (folder / "figures").glob("*.png")}
        assert {"multiclass_width_sweep.png", "multiclass_landscape_1d.png"} <= figs
        assert all(p.stat().st_size < 100_000 for p in (folder / "figures").iterdir())
    text = (into / "index.md").read_text()
    assert text == page(into)
    for proto in ("paper", "centred"):
        assert f"## digits, {proto} protocol" in text
        assert f"digits/{proto}/figures/multiclass_width_sweep.png" in text
    assert "0 of 8 cells converged and above chance" in text and f"`{run['command']}`" in text
    # the page command regenerates the same bytes from the folder alone
    (into / "index.md").unlink()
    assert runner.invoke(app, ["results", "page", "--into", str(into)]).exit_code == 0
    assert (into / "index.md").read_text() == text


@pytest.mark.slow
def test_results_add_draws_whatever_mplbackend_says(repro_run: Path, tmp_path: Path) -> None:
    """``results add`` loads matplotlib as ``figures`` does (``figures.use_agg``): an
    unknown $MPLBACKEND made matplotlib's import raise, an internal error."""
    import os
    import subprocess
    import sys

    pytest.importorskip("matplotlib")
    env = {**os.environ, "MPLBACKEND": "nonsense"}
    into = tmp_path / "results"
    code = "from malleability_tui.cli.main import main; main()"
    r = subprocess.run(
        [sys.executable, "-c", code, "results", "add", str(repro_run), "--into", str(into)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and "internal error" not in r.stderr, r.stderr
    assert (into / "digits" / "paper" / "figures" / "multiclass_width_sweep.png").is_file()


def test_results_add_refuses_what_is_not_a_reproduction(tmp_path: Path) -> None:
    res = runner.invoke(app, ["results", "add", str(tmp_path), "--into", str(tmp_path / "r")])
    assert res.exit_code == 2 and "reproduce.json" in res.output
    assert "Traceback" not in res.output


def test_the_page_says_when_a_sitting_recorded_no_end() -> None:
    """A sitting stopped before the end was recorded (before sittings recorded their
    interrupt) leaves the total a lower bound, and the page says so."""
    from engine.reproduce.page import _sittings

    run = {"sittings": [{"command": "a", "seconds": None}, {"command": "b", "seconds": 9.0}]}
    line = _sittings(run)
    assert "over 3 sittings" in line and "1 of them stopped without recording an end" in line
    assert "stopped" not in _sittings({"sittings": [{"command": "a", "seconds": 3.0}]})


def test_a_verdict_the_continuation_overturns_is_flagged_in_the_summary() -> None:
    """The summary table shows the continuation's verdict beside one it changed, and the
    section's column says which of verdict and numbers moved."""
    from engine.reproduce.page import _headline, _verify

    base = {"claim": 1, "verdict": "does not hold: ρ -0.98"}
    nums = {"MLP-Attn m=1024": [0.02, 0.016, 0.024, 0.043]}
    changed = {
        **base,
        "verify": {
            "epochs_x": 2,
            "before": "does not hold",
            "after": "holds",
            "moved": True,
            "numbers": nums,
        },
    }
    kept = {
        **base,
        "verify": {
            "epochs_x": 2,
            "before": "does not hold",
            "after": "does not hold",
            "moved": True,
            "numbers": nums,
        },
    }
    assert _headline(changed) == "does not hold, → holds at ×2 epochs"
    assert _headline(kept) == _headline(base) == "does not hold"
    assert _verify(changed["verify"]).startswith("verdict changed: does not hold → holds")
    assert _verify(kept["verify"]).startswith("verdict kept, numbers moved beyond")
