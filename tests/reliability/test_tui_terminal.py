"""Issue #29: ``malleability-tui`` without a terminal (``</dev/null``, a pipe, ``TERM=dumb``)
is one line and a non-zero exit, not escape codes drawn forever."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "MALLEABILITY_RUNS": str(tmp_path), **extra}


def test_no_terminal_on_stdin_is_one_line(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "malleability_tui.launch"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )
    assert r.returncode == 1 and r.stdout == "", r
    assert r.stderr.strip() == (
        "error: malleability-tui needs an interactive terminal (stdin is not a terminal); "
        "for scripts use: malleability headless"
    )


def test_term_dumb_is_one_line(tmp_path: Path) -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin and stdout are the pty, TERM=dumb
        os.execve(
            sys.executable,
            [sys.executable, "-m", "malleability_tui.launch"],
            _env(tmp_path, TERM="dumb"),
        )
    out = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the pty
                break
            if not chunk:
                break
            out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 1, text
    assert "TERM=dumb" in text and "\x1b[" not in text, text


def _tui_on_a_pty(tmp_path: Path, args: list[str], press: bytes | None, limit: float = 180):
    """Run the TUI on a pseudo-terminal; once drawn (and ``press`` typed and a run
    directory there, if given) send SIGTERM. Returns (exit code, output, run env.json)."""
    import json
    import signal

    runs = tmp_path / "runs"
    pid, fd = pty.fork()
    if pid == 0:
        env = _env(runs, TERM="xterm-256color", COLUMNS="80", LINES="24")
        os.execve(sys.executable, [sys.executable, "-m", "malleability_tui.launch", *args], env)
    out, t0, pressed, sent, status = b"", time.monotonic(), None, False, None
    while time.monotonic() - t0 < limit:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        drawn = len(out) > 10_000 and time.monotonic() - t0 > 3
        if press is not None and pressed is None and drawn:
            time.sleep(1)
            os.write(fd, press)
            pressed = time.monotonic()
        envs = list(runs.glob("*/env.json"))
        ready = drawn if press is None else bool(envs) and time.monotonic() - (pressed or 0) > 5
        if ready and not sent:
            time.sleep(1)
            os.kill(pid, signal.SIGTERM)
            sent = True
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
    if status is None:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    envs = list(runs.glob("*/env.json"))
    env = json.loads(envs[0].read_text()) if envs else None
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace"), env


def test_sigterm_quits_the_tui_cleanly(tmp_path: Path) -> None:
    code, out, _ = _tui_on_a_pty(tmp_path, [], None)
    assert code == 130 and "Traceback" not in out and out.rstrip().endswith("interrupted"), out[
        -300:
    ]


@pytest.mark.slow
def test_sigterm_closes_the_tuis_running_job(tmp_path: Path) -> None:
    from engine.run.spec import RunSpec

    spec = RunSpec.from_dict(
        {
            "experiment": "train",
            "seeds": [0],
            "device": "cpu",
            "data": {"name": "digits", "n_train": 60, "n_test": 20},
            "model": {"widths": [8], "kinds": ["relu"]},
            # Long enough to be running when SIGTERM comes (~6 s after ctrl+r): 4000
            # epochs of this tiny net take ~7 s as a whole headless process here, and once
            # finished first on an idle machine (the run read "finished").
            "train": {"epochs": 40000},
        }
    )
    spec.save(tmp_path / "s.toml")
    code, out, env = _tui_on_a_pty(tmp_path, [str(tmp_path / "s.toml")], b"\x12")  # ctrl+r: Run
    assert code == 130 and "Traceback" not in out, out[-300:]
    assert env is not None and env["status"] in ("cancelled", "interrupted"), env
