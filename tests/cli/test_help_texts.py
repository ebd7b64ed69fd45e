"""The CLI's help and messages (issue 41, "Help"): nothing eaten by rich markup, nothing
cut at 80 columns, the --quick texts equal to the preset, one install hint, argument
names in the usage line, --version, errors in the flag's words, the second export, and a
table caption as wide as the terminal."""

from __future__ import annotations

import re
import shutil
from importlib.metadata import version
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from malleability_tui.cli import common
from malleability_tui.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_RUN = ROOT / "tests/cli/golden/runs/20261203-193300-train-digits"
runner = CliRunner()

COMMANDS = [
    [],
    ["headless"],
    ["reproduce"],
    ["experiments"],
    ["export"],
    ["report"],
    ["figures"],
    ["data"],
    ["data", "list"],
    ["data", "fetch"],
    ["data", "show"],
    ["runs"],
    ["runs", "list"],
    ["runs", "show"],
]


def help_of(cmd: list[str], columns: int) -> str:
    res = runner.invoke(app, [*cmd, "--help"], env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, res.output
    return res.output


def flat(text: str) -> str:
    """Help text with the box and the wrapping taken out: one line of words."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


@pytest.mark.parametrize("cmd", [["headless"], ["reproduce"]])
def test_track_help_names_the_mlflow_extra(cmd: list[str]) -> None:
    """rich markup used to eat "[mlflow]": "needs the  extra"."""
    text = flat(help_of(cmd, 200))
    assert "needs the [mlflow] extra: pip install 'malleability[mlflow]'" in text


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "main")
def test_no_help_is_cut_or_wider_than_80_columns(cmd: list[str]) -> None:
    text = help_of(cmd, 80)
    cut = [ln for ln in text.splitlines() if re.search(r"…\s*│?\s*$", ln)]  # rich's ellipsis
    assert not cut, cut
    assert max(len(ln) for ln in text.splitlines()) <= 80


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "main")
def test_usage_names_arguments_in_capitals(cmd: list[str]) -> None:
    usage = next(ln for ln in help_of(cmd, 80).splitlines() if "Usage:" in ln)
    assert "{" not in usage and "}" not in usage, usage
    if cmd in (["runs", "show"], ["export"], ["report"], ["figures"]):
        assert usage.split()[-1] == "RUN", usage
    if cmd in (["data", "show"], ["data", "fetch"]):
        assert usage.split()[-1] == "NAME", usage


def test_quick_help_is_the_preset() -> None:
    """Both commands describe --quick with the same words, and the numbers are QUICK's."""
    from engine.reproduce.presets import QUICK
    from malleability_tui.options import QUICK_MAX_EPOCHS, QUICK_PRESET

    widths = ",".join(map(str, QUICK["model__widths"]))
    for part in (
        f"n_train {QUICK['data__n_train']}",
        f"widths {widths}",
        f"batch {QUICK['train__batch_size']}",
        f"{QUICK['train__epochs']} epochs then until converged",
        f"(cap {QUICK['train__max_epochs']})",
    ):
        assert part in QUICK_PRESET, part
    assert QUICK["train__until"] == "converged" and QUICK["data__center"] is True
    assert QUICK_MAX_EPOCHS == QUICK["train__max_epochs"]
    headless, reproduce = flat(help_of(["headless"], 200)), flat(help_of(["reproduce"], 200))
    assert QUICK_PRESET in headless and QUICK_PRESET in reproduce
    assert f"--quick: {QUICK['train__max_epochs']})" in reproduce  # --max-epochs' default
    assert "seeds 0 (one seed)" in headless and "seeds 0,1,2" in reproduce


def test_every_install_hint_is_the_same_command() -> None:
    """One form, ``pip install 'malleability[EXTRA]'``, in every message and help."""
    hint = re.compile(r"pip install [^\n\"]*")
    forms = set()
    for folder in ("engine", "malleability_tui"):
        for path in (ROOT / folder).rglob("*.py"):
            for m in hint.finditer(path.read_text(encoding="utf-8")):
                forms.add(re.sub(r"\\\\?\[", "[", m.group(0)))
    assert forms, "no install hint found"
    bad = {f for f in forms if not re.match(r"pip install 'malleability\[(\w+|{extra})\]'", f)}
    assert not bad, bad
    from engine.errors import needs_extra
    from engine.run.executors import RAY_HINT

    assert needs_extra("ray", "--executor ray") in RAY_HINT


def test_version_flag() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.output.strip() == f"malleability {version('malleability')}"


@pytest.mark.parametrize(
    "args",
    [
        ["headless", "--dataset", "digits", "--widths", "0"],
        ["reproduce", "--dataset", "digits", "--widths", "0", "--dry-run"],
    ],
)
def test_a_bad_width_is_named_by_its_flag(args: list[str]) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 2
    line = res.output.strip()
    assert line.startswith("error: invalid --widths '0': distinct positive integers"), line
    assert "model.widths" not in line and "(0,)" not in line


def test_the_second_export_says_what_is_there(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(GOLDEN_RUN, run)
    to = tmp_path / "out"
    first = runner.invoke(app, ["export", str(run), "--to", str(to)])
    assert first.exit_code == 0, first.output
    held = len(list(to.iterdir()))
    second = runner.invoke(app, ["export", str(run), "--to", str(to)])
    assert second.exit_code == 1
    line = " ".join(second.output.split())
    assert f"it holds {held} files (pass --force to overwrite them" in line, line
    assert "a new or empty folder" not in line


def test_a_table_caption_spans_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The constant columns under a narrow last part used to wrap at that part's width (29
    columns for the first run), and said "epochs=200" above a column of 200–830 epochs."""
    from malleability_tui.cli.render import print_table

    rows = [
        {"model": m, "dataset": "digits", "width": w, "seed": 0, "training": "standard",
         "epochs": 200, "train_loss": 0.5, "train_accuracy": 0.9, "test_loss": 0.5,
         "test_accuracy": 0.9, "seconds": 1.5, "converged": True, "above_chance": True,
         "epochs_run": e}
        for m, w, e in [("2L-ReLU", 16, 810), ("2L-ReLU", 1024, 200), ("MLP-Attn", 16, 830)]
    ]  # fmt: skip
    con = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    monkeypatch.setattr(common, "console", con)
    print_table(con, "train", rows)
    lines = con.export_text().splitlines()
    cap = next(i for i, ln in enumerate(lines) if ln.startswith("dataset=digits"))
    assert "min_epochs=200" in lines[cap] and not re.search(r"(?<!min_)epochs=200", lines[cap])
    assert len(lines[cap].rstrip()) > 60  # wrapped at the terminal's width, not the table's
    assert all(len(ln) <= 80 for ln in lines)


def test_scale_help_is_the_preset() -> None:
    """--scale data's help states DATA_SCALE's and DATA_SIZES's numbers (typed by hand)."""
    from engine.reproduce.presets import DATA_SCALE, DATA_SIZES, SCALE_BUDGET_S

    text = flat(help_of(["reproduce"], 400))
    ws, seeds = DATA_SCALE["model__widths"], DATA_SCALE["seeds"]
    assert isinstance(ws, tuple) and isinstance(seeds, tuple)
    for part in (
        f"n_train {DATA_SIZES['mnist'][0]} MNIST/Fashion",
        f"{DATA_SIZES['cifar10'][0]} CIFAR-10",
        f"widths {ws[0]}-{ws[-1]}",
        "seeds " + ",".join(map(str, seeds)),
        f"<= {SCALE_BUDGET_S / 60:g} min per data set and protocol",
    ):
        assert part in text, part
    assert DATA_SIZES["fashion-mnist"] == DATA_SIZES["mnist"]
