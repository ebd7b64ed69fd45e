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


def test_data_list_finds_data_sets_without_numpy(tmp_path: Path) -> None:
    # numpy is ~0.2 s of a 0.5 s start: finding data sets reads headers only (an IDX
    # folder, the MNIST layout, is counted from its headers as `data list` does)
    import numpy as np

    from engine.data.idx import write_idx

    folder = tmp_path / "mnist"
    folder.mkdir()
    write_idx(folder / "t10k-images-idx3-ubyte", np.zeros((3, 28, 28), np.uint8))
    write_idx(folder / "t10k-labels-idx1-ubyte", np.zeros(3, np.uint8))
    code = (
        "import sys\n"
        f"sys.argv = ['malleability', 'data', 'list', '--data-dir', {str(tmp_path)!r}]\n"
        "from malleability_tui.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.exit(3 if 'numpy' in sys.modules else 0)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(tmp_path)
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "test 3" in r.stdout


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
