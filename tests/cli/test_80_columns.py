"""Golden outputs at 80 columns: runs list/show, experiments, data show, the reproduce
comparison and a headless run; no line over 80 columns and no number or name split.

The golden files are in tests/cli/golden/; after an intended change of layout, rewrite
them with ``UPDATE_GOLDEN=1 python -m pytest tests/cli/test_80_columns.py``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from malleability_tui.cli import common
from malleability_tui.cli.main import app
from malleability_tui.text import number

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
RUNS = GOLDEN / "runs"
runner = CliRunner()


@pytest.fixture(autouse=True)
def eighty(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every CLI console 80 columns wide, as in an 80×24 terminal; paths relative to the repo."""
    monkeypatch.setattr(common.console, "width", 80)
    monkeypatch.setattr(common.err_console, "width", 80)
    monkeypatch.chdir(ROOT)


def assert_fits(text: str, tokens: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """No line longer than 80 columns; each token whole on one line (never split)."""
    lines = text.splitlines()
    long = [ln for ln in lines if len(ln) > 80]
    assert not long, "over 80 columns:\n" + "\n".join(long)
    for tok in tokens:
        assert any(tok in ln for ln in lines), f"{tok!r} is split across lines or missing"


def golden(name: str, text: str) -> None:
    """``text`` equals tests/cli/golden/NAME (trailing spaces aside)."""
    path = GOLDEN / name
    got = "\n".join(ln.rstrip() for ln in text.splitlines()) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(got)
    assert got == path.read_text(), f"differs from {path} (UPDATE_GOLDEN=1 rewrites it)"


def _cells(run: Path) -> set[str]:
    """Every value of the run's CSVs as a table prints it."""
    out: set[str] = set()
    for f in run.glob("*.csv"):
        header, *rows = f.read_text().splitlines()
        for row in rows:
            out.update(number(v) for v in row.split(",") if v)
    return out


def _invoke(args: list[str]) -> str:
    res = runner.invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def test_runs_list() -> None:
    out = _invoke(["runs", "list", "--root", "tests/cli/golden/runs"])
    names = {p.name for p in RUNS.iterdir()}
    assert_fits(out, names | {"12-03 19:31", "finished"})
    golden("runs_list.txt", out)


@pytest.mark.parametrize("run", sorted(p.name for p in RUNS.iterdir()))
def test_runs_show(run: str) -> None:
    out = _invoke(["runs", "show", run, "--root", "tests/cli/golden/runs"])
    assert_fits(out, _cells(RUNS / run) | {"2L-ReLU", "MLP-Attn"})
    assert not re.search(r"\d\.\d{6,}", out), "raw floats: every number goes through text"
    golden(f"runs_show_{run}.txt", out)


def test_experiments() -> None:
    out = _invoke(["experiments"])
    from engine.experiments.registry import LISTING

    assert_fits(out, set(LISTING))
    golden("experiments.txt", out)


def test_data_show_digits() -> None:
    out = _invoke(["data", "show", "digits"])
    assert_fits(out, {"sklearn.datasets.load_digits", "1,797", "total"})
    golden("data_show_digits.txt", out)


def test_reproduce_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    """The reproduce printout of a tiny run's comparison (digits, --quick, widths 8–64,
    8 epochs): the tables fit, and the checklist is one line per claim and data set."""
    from malleability_tui.cli.reproduce import show_comparison

    cmp = json.loads((GOLDEN / "reproduce_summary.json").read_text())
    show_comparison(cmp)
    out = capsys.readouterr().out
    tokens = {"2L-ReLU", "MLP-Attn", "digits"}
    for c in cmp["table1"]:
        tokens.add(str(c["width"]))
    assert_fits(out, tokens)
    lines = out.splitlines()
    head = lines.index("Claims checklist (rules: docs/claims.md#rules)")
    marks = [ln for ln in lines[head + 1 :] if ln[:1] in "✓✗?·"]
    assert len(marks) == len(cmp["checklist"])
    golden("reproduce_comparison.txt", out)


def test_headless_tiny_run(tmp_path: Path) -> None:
    """A live run (no golden: its seconds differ): it fits, each guard warning once."""
    out = _invoke(
        [
            "headless",
            "--dataset",
            "digits",
            "--experiment",
            "ntk",
            "--quick",
            "--widths",
            "8,16",
            "--epochs",
            "2",
            "--n-train",
            "60",
            "--n-test",
            "30",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    assert_fits(out, {"2L-ReLU", "MLP-Attn", "ntk_distance (1/2)", "ntk_distance (2/2)"})
    joined = " ".join(out.split())
    assert joined.count("MLP-Attn: distance") == 1, "a guard's line is printed once"


def test_reproduce_comparison_ascii(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ASCII stdout (``LC_ALL=C``): the signs are spelled out (``kappa``, ``+/-``)
    before the tables are laid out, so the printout still fits 80 columns, no token split."""
    import io

    from malleability_tui.cli.reproduce import show_comparison

    buf = io.BytesIO()
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(buf, encoding="ascii"))
    cmp = json.loads((GOLDEN / "reproduce_summary.json").read_text())
    show_comparison(cmp)
    import sys

    sys.stdout.flush()
    out = buf.getvalue().decode("ascii")  # nothing but ASCII
    tokens = {"2L-ReLU", "MLP-Attn", "kappa(G)^3", "kappa(G^3) measured", "+/-"}
    assert_fits(out, tokens)
    lines = out.splitlines()
    head = lines.index("Claims checklist (rules: docs/claims.md#rules)")
    marks = [ln for ln in lines[head + 1 :] if ln[:2] in ("+ ", "x ", "? ", "- ")]
    assert len(marks) == len(cmp["checklist"])
    assert len({ln.index(" digits") for ln in marks}) == 1  # the columns stay aligned
    golden("reproduce_comparison_ascii.txt", out)


def test_reproduce_time_budget_keeps_names_whole() -> None:
    """The dry run's time budget at 80 columns for the longest run names (Fashion-MNIST,
    --scale data, both protocols: fashion-mnist-multiclass-centred): no line over 80, no
    name cut with "…", and every run's data set and remainder printed whole."""
    import io

    from rich.console import Console

    from engine.experiments.estimate import breakdown
    from engine.reproduce.plan import plan
    from malleability_tui.cli.reproduce import breakdown_table

    parts = plan(("fashion-mnist",), scale="data", protocols=("paper", "centred"))
    assert "fashion-mnist-multiclass-centred" in {p.key for p in parts}
    lines = breakdown(
        [(p.key, p.spec) for p in parts], flops_per_s=3e11, step_s=1e-3, stream_s=1e-9
    )
    total = sum(ln.estimate_s for ln in lines)
    con = Console(file=io.StringIO(), width=80, record=True)
    con.print(breakdown_table(lines, total, {p.key: p.dataset for p in parts}))
    out = con.export_text()
    assert "…" not in out, out
    tokens = {"fashion-mnist", "fixed: data, spectra, summaries"}
    tokens |= {p.key.removeprefix("fashion-mnist-") for p in parts}
    tokens |= {ln.experiment for ln in lines if not ln.experiment.startswith("(")}
    assert_fits(out, tokens)
    rows = [ln.split() for ln in out.splitlines()]
    for p in parts:  # each run's rows: its remainder under its data set's own row
        rest = p.key.removeprefix("fashion-mnist-")
        assert sum(r[:1] == [rest] for r in rows) == len([ln for ln in lines if ln.run == p.key]), (
            rest
        )
