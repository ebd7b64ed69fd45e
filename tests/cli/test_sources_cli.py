"""`malleability headless` and `data show` on npz:, folder: and hf: sources (fixtures
written by sample_data/make_own_data.py's functions)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from own_sources import needs_pyarrow, write_all
from typer.testing import CliRunner

from malleability_tui.cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return write_all(tmp_path_factory.mktemp("own"), per_class=100)  # 300 images, 3 classes


@pytest.mark.parametrize("kind", ["npz", "folder", "hf"])
def test_headless_train_quick_on_each_source(
    sources: dict[str, str], kind: str, tmp_path: Path
) -> None:
    if kind == "hf":
        needs_pyarrow()
    out = tmp_path / "run"
    res = runner.invoke(
        app,
        ["headless", "--dataset", sources[kind], "--experiment", "train", "--quick",
         "--epochs", "3", "--widths", "8", "--out", str(out), "-q"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "what its classes hold" in res.output  # --quick capped n to the source's classes
    rows = list(csv.DictReader(open(out / "train.csv")))
    assert len(rows) == 2 and {r["dataset"] for r in rows} == {sources[kind]}
    assert json.loads((out / "summary.json").read_text())["status"] == "finished"


def test_default_run_dir_name_is_a_slug(
    sources: dict[str, str], tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("MALLEABILITY_RUNS", str(tmp_path))
    res = runner.invoke(
        app,
        ["headless", "-d", sources["npz"], "-e", "train", "--epochs", "1", "--widths", "4",
         "--n-train", "30", "--n-test", "9", "--seeds", "0", "--models", "relu", "-q"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    (run,) = tmp_path.iterdir()
    assert run.name.endswith("-train-npz-shapes")


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        ("npz", ["0", "1", "2"]),
        ("folder", ["checks", "hstripes", "vstripes"]),
        ("hf", ["hstripes", "vstripes", "checks"]),
    ],
)
def test_data_show_describes_each_source(
    sources: dict[str, str], kind: str, names: list[str]
) -> None:
    if kind == "hf":
        needs_pyarrow()
    res = runner.invoke(app, ["data", "show", sources[kind]], terminal_width=200)
    assert res.exit_code == 0, res.output
    for i, n in enumerate(names):  # a class whose name is its index prints once
        assert (f"{i} {n}" if n != str(i) else f"│ {i} ") in res.output
    assert "total" in res.output and "300" in res.output and "16×16" in res.output


def test_data_show_with_size_and_mode(sources: dict[str, str]) -> None:
    res = runner.invoke(
        app, ["data", "show", sources["folder"], "--image-size", "8", "--mode", "rgb"]
    )
    assert res.exit_code == 0, res.output
    assert "8×8×3 (d = 192)" in res.output


def test_spectrum_extra_sources_are_checked_before_the_run(
    sources: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    bad = ["headless", "-d", "digits", "-e", "spectrum", "--quick", "--out", str(out), "-q"]
    res = runner.invoke(app, [*bad, "--datasets", f"npz:{tmp_path / 'nope.npz'}"])
    assert res.exit_code != 0 and "not found" in res.output and not out.exists()
    ok = [*bad, "--datasets", sources["npz"], "--n-train", "60", "--n-test", "30"]
    res = runner.invoke(app, ok)
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(open(out / "spectrum.csv")))
    assert [r["dataset"] for r in rows] == ["digits", sources["npz"]]
    assert rows[1]["d"] == "256"
