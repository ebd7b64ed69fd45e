"""`malleability figures`: what a run can give, the experiments a missing figure needs, and
a clear failure (no empty folder) when nothing can be drawn."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from malleability_tui.cli.main import app

pytest.importorskip("matplotlib")
RUNS = Path(__file__).resolve().parent / "golden" / "runs"
runner = CliRunner()


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(RUNS / name, tmp_path / name))


def test_a_train_run_gives_its_figures_and_names_the_rest(tmp_path: Path) -> None:
    run = _copy("20261203-193300-train-digits", tmp_path)
    res = runner.invoke(app, ["figures", str(run), "--to", str(tmp_path / "fig")])
    assert res.exit_code == 0, res.output
    names = {p.name for p in (tmp_path / "fig").iterdir()}
    label = run.name
    assert {f"{label}_train_accuracy.png", f"{label}_table2_flip_rates.png"} <= names
    out = " ".join(res.output.split())
    assert "not drawn: table1_ntk_distance: needs the ntk experiment" in out
    assert "spectrum_G_G3: needs the spectrum experiment" in out


def test_training_curves_come_from_the_events(tmp_path: Path) -> None:
    from malleability_tui.cli.figures import train_curves

    run = _copy("20261203-193300-train-digits", tmp_path)
    (run / "events.jsonl").write_text(
        '{"kind": "Metric", "name": "train_loss", "value": 2.3, "step": 1,'
        ' "cell": "train/digits/relu/8/0"}\n'
        '{"kind": "Metric", "name": "train_loss", "value": 2.1, "step": 2,'
        ' "cell": "train/digits/relu/8/0"}\n'
        '{"kind": "Metric", "name": "train_los'  # a line cut by an interruption
    )
    assert train_curves({"path": str(run)}) == {"train/digits/relu/8/0": ([1.0, 2.0], [2.3, 2.1])}
    res = runner.invoke(app, ["figures", str(run), "--to", str(tmp_path / "fig")])
    assert res.exit_code == 0 and (tmp_path / "fig" / f"{run.name}_train_curves.png").is_file()


def test_nothing_to_draw_fails_clearly_without_a_folder(tmp_path: Path) -> None:
    run = _copy("20261203-193100-ntk-digits", tmp_path)
    (run / "ntk_distance.csv").unlink()
    res = runner.invoke(app, ["figures", str(run), "--to", str(tmp_path / "fig")])
    assert res.exit_code == 1, res.output
    assert "no figure" in res.output and "needs the ntk experiment" in " ".join(res.output.split())
    assert not (tmp_path / "fig").exists()


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_report_leads_with_the_numbers_and_ends_with_the_spec(tmp_path: Path, fmt: str) -> None:
    run = _copy("20261203-193100-ntk-digits", tmp_path)
    res = runner.invoke(app, ["report", str(run), "--format", fmt])
    assert res.exit_code == 0, res.output
    text = (run / f"report.{fmt}").read_text()
    order = [text.index(s) for s in ("Headline numbers", "Figures", "ntk_distance.csv")]
    order.append(text.index("[model]"))  # the spec TOML
    assert order == sorted(order), order


def test_paths_are_printed_whole_at_80_columns(tmp_path: Path) -> None:
    """Each `wrote PATH` is one line naming an existing file, however long the path (they
    were hard-wrapped at 80 columns: a path cut in two cannot be copied)."""
    deep = tmp_path / ("a-folder-with-a-long-name-" * 3) / "figures-of-this-run"
    deep.parent.mkdir(parents=True)
    run = _copy("20261203-193300-train-digits", tmp_path)
    res = runner.invoke(app, ["figures", str(run), "--to", str(deep)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    wrote = [ln.removeprefix("wrote ") for ln in res.output.splitlines() if ln.startswith("wrote ")]
    assert wrote and all(len(p) > 80 and Path(p).is_file() for p in wrote), res.output
    assert len(wrote) == len(list(deep.iterdir()))
