"""`malleability reproduce --quick` end to end on digits, report and figures; "no data"."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from malleability_tui.cli.main import app

runner = CliRunner()
TABLES = (
    "spectrum",
    "eigenvalues",
    "alignment",
    "ntk_distance",
    "flip_rates",
    "landscape",
    "sharpness",
)


@pytest.fixture(scope="module")
def repro(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("repro") / "digits"
    res = runner.invoke(
        app,
        [
            "reproduce",
            "--dataset",
            "digits",
            "--quick",
            "--seeds",
            "0",
            "--widths",
            "8,16,32,64",
            "--epochs",
            "8",
            "--max-epochs",
            "8",  # until converged, capped at 8: the cells stay unconverged on purpose
            "--device",
            "cpu",
            "--out",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    assert "Claims checklist" in res.output
    return out


def _finite_numbers(obj) -> list[float]:
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _finite_numbers(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in _finite_numbers(v)]
    return [obj] if isinstance(obj, float) else []


def test_every_file_table_and_claim(repro: Path) -> None:
    meta = json.loads((repro / "reproduce.json").read_text())
    assert [p["key"] for p in meta["parts"]] == [
        "digits-multiclass",
        "digits-binary",
        "digits-binary-gd",
    ]
    multi = repro / "digits-multiclass"
    for t in TABLES:
        rows = (multi / f"{t}.csv").read_text().splitlines()
        assert len(rows) > 1, t
    # models × attacks × the four protocols of the sensitivity grid
    assert (
        len((repro / "digits-binary" / "flip_rates.csv").read_text().splitlines()) == 1 + 2 * 3 * 4
    )
    s = json.loads((repro / "summary.json").read_text())
    assert (
        len(s["table1"]) == 6
        and len(s["table2"]) == 6
        and len(s["table3"]) == 6
        and len(s["table4"]) == 2
    )
    assert sorted(c["claim"] for c in s["checklist"]) == [
        1,
        1,
        2,
        3,
        4,
        5,
        6,
        7,
    ]  # claim 1: Adam and GD
    assert all(
        c["verdict"].split(":")[0] in ("holds", "does not hold", "inconclusive")
        for c in s["checklist"]
        if c["claim"] != 7
    )
    # 8 epochs leave MLP-Attn on its initial plateau: the guarded claims say so
    for c in s["checklist"]:
        if c["claim"] in (3, 6) or (c["claim"] == 1 and c["sweep"] == "Adam, 10-class"):
            assert c["verdict"].startswith("inconclusive: models not converged"), c
    assert [c["verdict"] for c in s["checklist"] if c["claim"] == 7] == ["no data"]  # no QKV-Attn
    for cell in s["table2"] + s["table3"]:
        assert (
            cell.get("status") != "no data"
            and math.isfinite(cell["mean"])
            and cell["ci_low"] <= cell["mean"] <= cell["ci_high"]
        )
    for cell in s["table4"]:
        assert math.isfinite(cell["standard"]["mean"]) and math.isfinite(
            cell["adversarial"]["mean"]
        )
    # Table 1 asks for m = 16, 1024, 4096: the sweep has 16 only, the rest are "no data" with a reason.
    t1 = {(c["model"], c["width"]): c for c in s["table1"]}
    assert (
        math.isfinite(t1[("2L-ReLU", 16)]["mean"]) and t1[("2L-ReLU", 1024)]["status"] == "no data"
    )
    assert "1024" in t1[("2L-ReLU", 1024)]["reason"]
    assert s["kappa"][0]["kappa_G"] > 1
    nums = _finite_numbers({k: s[k] for k in ("table2", "table3", "kappa")})
    assert nums and all(math.isfinite(x) for x in nums if x is not None)


def test_report_md_html_and_figures(repro: Path, tmp_path: Path) -> None:
    for fmt in ("md", "html"):
        res = runner.invoke(
            app, ["report", str(repro), "--format", fmt, "--to", str(tmp_path / f"r.{fmt}")]
        )
        assert res.exit_code == 0, res.output
        text = (tmp_path / f"r.{fmt}").read_text()
        assert "Claims checklist" in text and "Table 2" in text and "flip_rates" in text
    pytest.importorskip("matplotlib")
    res = runner.invoke(
        app, ["figures", str(repro), "--format", "png", "--to", str(tmp_path / "fig")]
    )
    assert res.exit_code == 0, res.output
    names = {p.name for p in (tmp_path / "fig").glob("*.png")}
    for want in (
        "digits-multiclass_table1_ntk_distance.png",
        "digits-multiclass_spectrum_G_G3.png",
        "digits-multiclass_table2_flip_rates.png",
        "digits-binary_table3_flip_rates.png",
        "digits-multiclass_table4_adversarial.png",
        "digits-multiclass_landscape_2d.png",
    ):
        assert want in names


def test_missing_data_is_reported_not_invented(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = runner.invoke(
        app,
        [
            "reproduce",
            "--dataset",
            "cifar10",
            "--data-dir",
            str(empty),
            "--quick",
            "--out",
            str(tmp_path / "r"),
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    cells = s["table1"] + s["table2"] + s["table3"] + s["table4"] + s["kappa"]
    assert all(c["status"] == "no data" and "cifar10" in c["reason"] for c in cells)
    # each verdict says why: "no data: <the data set's problem>"
    assert all(
        c["verdict"].startswith("no data: ") and "cifar10" in c["verdict"] for c in s["checklist"]
    )
    assert "no data" in res.output


def test_bad_tables_option(tmp_path: Path) -> None:
    res = runner.invoke(
        app, ["reproduce", "--dataset", "digits", "--tables", "5", "--out", str(tmp_path / "r")]
    )
    assert res.exit_code != 0 and "--tables" in res.output and "Traceback" not in res.output


def test_out_inside_another_run_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").write_text("")
    res = runner.invoke(
        app, ["reproduce", "--dataset", "digits", "--quick", "--out", str(run / "rep")]
    )
    assert res.exit_code != 0 and "outside the run directory" in res.output, res.output
    assert "Traceback" not in res.output and not (run / "rep").exists()


def test_center_fraction_names_its_protocol_and_refuses_a_second_choice(tmp_path: Path) -> None:
    """reproduce --center-fraction α: the plan's parts centre by α (0 and 1 are the paper's
    and the centred protocol); with --center or --protocols, or outside [0, 1], one line."""
    base = ["reproduce", "--dataset", "digits", "--quick", "--tables", "2", "--dry-run"]
    res = runner.invoke(app, [*base, "--center-fraction", "0.5", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert "digits-multiclass (spectrum" in res.output
    assert not (tmp_path / "a").exists()
    for extra, want in [
        (["--center-fraction", "0.5", "--center"], "--center-fraction with --center"),
        (["--center-fraction", "0.5", "--protocols", "paper"], "use one of them"),
        (["--center-fraction", "1.5"], "invalid --center-fraction 1.5: a number from 0 to 1"),
        (["--protocols", "alpha-2"], "invalid --protocols 'alpha-2': paper, centred or alpha-"),
    ]:
        bad = runner.invoke(app, [*base, *extra])
        assert bad.exit_code != 0 and want in bad.output, (extra, bad.output)
        assert "Traceback" not in bad.output
