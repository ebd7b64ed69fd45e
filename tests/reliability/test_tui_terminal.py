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

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "MALLEABILITY_RUNS": str(tmp_path), **extra}


def test_no_terminal_on_stdin_is_one_line(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "malleability_tui.app"],
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
            [sys.executable, "-m", "malleability_tui.app"],
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
