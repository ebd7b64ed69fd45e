"""One writer per run directory: an exclusive ``.lock`` holding the owner's pid and host.

The claim is an ``fcntl.flock`` on ``<run>/.lock`` (the kernel drops it when the owner
dies, even by SIGKILL, so a lock can never be held by a dead process); the file's
content (``{"pid", "host", "since"}``) names the owner for the refusal message
"run in progress (pid N on HOST)" and lets readers tell a live run from one that was
killed (status ``running`` in env.json but no live owner → ``interrupted``).
A lock file left behind by a dead owner is taken over with a note. Local file
systems only (flock over NFS is not reliable).
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from engine.errors import EngineError
from engine.procs import pid_alive

LOCK_NAME = ".lock"

try:  # POSIX; elsewhere the lock degrades to the pid/host file alone
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class RunInProgress(EngineError):
    """Another process is writing this run directory."""


def _owner(path: Path) -> dict[str, Any] | None:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return d if isinstance(d, dict) and isinstance(d.get("pid"), int) else None


def recorded_owner(run_dir: str | Path) -> dict[str, Any] | None:
    """The owner ``run_dir``'s lock file names, alive or not; None without such a file
    (a ``.lock`` of another program, pytest's say, is not a run's)."""
    return _owner(Path(run_dir) / LOCK_NAME)


def live_owner(run_dir: str | Path) -> dict[str, Any] | None:
    """The owner of ``run_dir``'s lock if a writer holds it now, else None (for readers).

    On this host the pid must be alive; a lock from another host is trusted.
    """
    own = _owner(Path(run_dir) / LOCK_NAME)
    if own is None:
        return None
    if own.get("host") != socket.gethostname():
        return own
    if own["pid"] == os.getpid():
        return own if _held_by_us(run_dir) else None
    return own if pid_alive(own["pid"]) else None


_HELD: dict[str, int] = {}  # lock path → fd, for the locks this process holds


def _held_by_us(run_dir: str | Path) -> bool:
    return str(Path(run_dir) / LOCK_NAME) in _HELD


class RunLock:
    """``with RunLock(dir):`` or ``acquire()`` / ``release()``; ``note`` says if a stale lock was taken over."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_NAME
        self.note: str | None = None
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        """Claim the directory or raise ``RunInProgress``."""
        for _ in range(5):  # retry if the file was replaced between open and flock
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    own = _owner(self.path) or {}
                    raise RunInProgress(
                        f"run in progress (pid {own.get('pid', '?')} on {own.get('host', '?')}): "
                        f"{self.path.parent} has another writer; wait for it or stop it first"
                    ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            old = _owner(self.path)
            if old is not None and old.get("host") != socket.gethostname():
                os.close(fd)
                raise RunInProgress(
                    f"run in progress (pid {old['pid']} on {old.get('host', '?')}), another host: "
                    f"if no process there writes {self.path.parent}, remove {self.path}"
                )
            if old is not None and old.get("pid") != os.getpid():
                self.note = (
                    f"took over a stale lock of {self.path.parent} "
                    f"(pid {old['pid']} on {old.get('host', '?')} is gone)"
                )
            me = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
            os.fsync(fd)
            self._fd = fd
            _HELD[str(self.path)] = fd
            return self
        raise RunInProgress(
            f"could not lock {self.path} (it keeps being replaced)"
        )  # pragma: no cover

    def release(self) -> None:
        """Remove the lock file and drop the claim. Idempotent."""
        if self._fd is None:
            return
        try:
            self.path.unlink()
        except OSError:
            pass
        os.close(self._fd)  # closing drops the flock
        _HELD.pop(str(self.path), None)
        self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
