"""Issue #29: a broken, full or size-limited stdout, or one that cannot encode the CLI's
signs, never costs a run: training goes on, the run directory is written and closed as
"finished", and the command ends with one clear line on stderr (no internal error)."""

from __future__ import annotations

import errno
import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_support import TINY

from malleability_tui.cli.common import SafeStream
from malleability_tui.text import encodable

ROOT = Path(__file__).resolve().parents[2]
LOUD = [a for a in TINY if a != "--quiet"]  # progress bars and tables on stdout


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MALLEABILITY_RUNS": str(tmp / "runs"),
        "MALLEABILITY_LOG_DIR": str(tmp / "logs"),
        "COLUMNS": "80",
        **extra,
    }


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "malleability_tui.cli.main", *args]


def _status(run: Path) -> str:
    return json.loads((run / "env.json").read_text())["status"]


def test_a_reader_that_goes_away_does_not_cost_the_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    p = subprocess.Popen(
        _cli("headless", *LOUD, "--out", str(run)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(10)  # `| head -c 10`
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait(timeout=300)
    assert rc != 0 and "stdout failed (Broken pipe)" in err, err
    assert "internal error" not in err and "Traceback" not in err, err
    assert _status(run) == "finished" and (run / "train.csv").is_file()


def test_a_full_disk_on_stdout_does_not_cost_the_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            _cli("headless", *LOUD, "--out", str(run)),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(tmp_path),
            timeout=300,
        )
    assert r.returncode == 1, r.stderr
    assert "stdout failed (No space left on device)" in r.stderr
    assert "internal error" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert _status(run) == "finished" and (run / "train.csv").is_file()


def test_a_file_size_limit_is_one_line_naming_the_file(tmp_path: Path) -> None:
    run = tmp_path / "run"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    r = subprocess.run(
        _cli("headless", *TINY, "--out", str(run)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
        preexec_fn=limit,
        timeout=300,
    )
    assert r.returncode == 1, r.stderr
    assert "File too large" in r.stderr and str(run) in r.stderr, r.stderr
    assert "internal error" not in r.stderr
    assert not (run / ".lock").exists()  # the writer let go of the run


@pytest.mark.parametrize(
    "extra", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}]
)
def test_an_ascii_stdout_gets_ascii_text(tmp_path: Path, extra: dict[str, str]) -> None:
    run = tmp_path / "run"
    env = _env(tmp_path, **extra)
    env.pop("PYTHONIOENCODING", None) if "LC_ALL" in extra else None
    for args in (
        ["headless", *LOUD, "--out", str(run)],
        ["runs", "show", str(run)],
        ["experiments"],
    ):
        r = subprocess.run(_cli(*args), capture_output=True, env=env, timeout=300)
        assert r.returncode == 0, (args, r.stderr.decode(errors="replace"))
        r.stdout.decode("ascii")  # nothing but ASCII
    assert _status(run) == "finished"


def test_encodable_spells_signs_out_in_ascii() -> None:
    assert encodable("⚠ κ(G³) · 1±2 → ∞", "ascii") == "! kappa(G^3) - 1+/-2 -> inf"
    assert encodable("κ ok", "utf-8") == "κ ok"
    assert encodable("日本", "ascii") == "??"
    assert encodable("κ", "no-such-codec") == "kappa"


class _Failing(io.StringIO):
    def __init__(self, err: int) -> None:
        super().__init__()
        self.err = err
        self.calls = 0

    def write(self, s: str) -> int:
        self.calls += 1
        raise OSError(self.err, os.strerror(self.err))


@pytest.mark.parametrize("err", [errno.EPIPE, errno.ENOSPC, errno.EFBIG])
def test_safe_stream_drops_a_failed_stream_and_remembers(monkeypatch, err: int) -> None:
    bad = _Failing(err)
    monkeypatch.setattr(sys, "stdout", bad)
    s = SafeStream()
    assert s.write("a") == 1 and s.write("b") == 1
    s.flush()
    assert s.failed is not None and s.failed.errno == err and bad.calls == 1
