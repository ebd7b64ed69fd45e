"""The CLI starts without torch for commands that need no tensor, and a closed stdout
(``malleability ... | head``) ends quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "textual", "scipy", "sklearn", "matplotlib", "engine.experiments.train")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "MALLEABILITY_RUNS": str(tmp_path)}


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["headless", "--help"],
        ["reproduce", "--help"],
        ["experiments"],
        ["data", "list"],
        ["runs", "list"],
        ["report", "--help"],
        ["figures", "--help"],
    ],
)
def test_commands_without_tensors_never_import_torch(argv: list[str], tmp_path: Path) -> None:
    code = (
        "import sys\n"
        f"sys.argv = ['malleability', *{argv!r}]\n"
        "from malleability_tui.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"bad = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print('HEAVY', bad, file=sys.stderr); sys.exit(3 if bad else 0)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(tmp_path)
    )
    assert r.returncode == 0, r.stderr[-2000:]


def test_help_shows_no_type_metavars(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "malleability_tui.cli.main", "runs", "show", "--help"],
        capture_output=True,
        text=True,
        env={**_env(tmp_path), "COLUMNS": "80"},
    )
    assert r.returncode == 0 and "--root" in r.stdout
    assert "<bool>" not in r.stdout and "<str>" not in r.stdout and "<path>" not in r.stdout
    assert "PATH" in r.stdout  # a value option still says what it takes


@pytest.mark.parametrize("argv", [["headless", "--help"], ["reproduce", "--help"]])
def test_closed_stdout_exits_quietly(argv: list[str], tmp_path: Path) -> None:
    p = subprocess.Popen(
        [sys.executable, "-m", "malleability_tui.cli.main", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**_env(tmp_path), "COLUMNS": "80"},
    )
    assert p.stdout is not None and p.stderr is not None
    for _ in range(10):  # `| head`: ten lines, then the reader goes
        p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait()
    assert "error" not in err and "Traceback" not in err, err
    assert rc in (0, 1)
