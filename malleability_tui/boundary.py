"""The error boundary of every front end (the ``malleability`` CLI and the TUI).

Expected failures (EngineError, an OSError on a named file) become one line on stderr;
anything else is a bug: one line naming a log file that holds the traceback, never the
traceback itself on the terminal. SIGTERM is handled like Ctrl-C, so a terminated run
closes its directory as "interrupted".
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.errors import Cancelled, EngineError

EXIT_BUG = 70  # EX_SOFTWARE


def log_dir() -> Path:
    """Where crash logs go: $MALLEABILITY_LOG_DIR, else the user log dir, else the temp dir."""
    env = os.environ.get("MALLEABILITY_LOG_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_log_dir("malleability"))


def write_crash_log(exc: BaseException) -> Path | None:
    """The traceback of ``exc`` in a new file of ``log_dir()``; its path (None if unwritable)."""
    try:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except MemoryError:  # under a memory limit: the one line still goes out
        return None
    header = f"malleability crash {time.strftime('%Y-%m-%dT%H:%M:%S%z')} pid {os.getpid()}\nargv: {sys.argv}\n\n"
    for folder in (log_dir(), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(
                prefix=time.strftime("crash-%Y%m%d-%H%M%S-"), suffix=".log", dir=folder
            )
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(header + text)
            return Path(name)
        except OSError:
            continue
    return None


def error_line(exc: BaseException) -> tuple[str, int]:
    """(one-line message, exit code) for any exception reaching a front end's boundary."""
    if isinstance(exc, Cancelled):
        return f"cancelled: {exc}", 130
    if isinstance(exc, EngineError):
        return str(exc), 1
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}", 1
    if isinstance(exc, MemoryError):
        return "out of memory: use a smaller data subset, fewer widths or a smaller width", 1
    if isinstance(exc, ImportError) and (lib := _library(exc)) is not None:
        msg = " ".join(str(exc).split())[:200]
        return (
            f"cannot load {lib}: {msg} (a memory limit such as ulimit -v is too low, or the "
            "install is broken: reinstall it)",
            1,
        )
    log = write_crash_log(exc)
    where = f"traceback in {log}" if log else "no log could be written"
    msg = " ".join(str(exc).split())[:200]
    return f"internal error {type(exc).__name__}: {msg} ({where}; please report it)", EXIT_BUG


LIBRARIES = {"torch": "PyTorch", "sklearn": "scikit-learn", "PIL": "Pillow"}
"""Display names of the packages whose import can fail for want of memory or a broken
install (a native library that cannot be mapped); others are named as imported."""


def _library(exc: ImportError) -> str | None:
    """The installed package whose import failed (its display name), or None when it is not
    a third-party package (an import error in this project's own code is a bug)."""
    import re

    # the first third-party frame after this project's last one is the package the project
    # imported (torch, not the library torch was loading when memory ran out; not typer,
    # which called the command); then the message's own path
    root = Path(__file__).resolve().parents[1]
    ours = tuple(f"{root / pkg}{os.sep}" for pkg in ("engine", "malleability_tui"))
    files = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    last_own = max((i for i, f in enumerate(files) if f.startswith(ours)), default=-1)
    for text in files[last_own + 1 :] + [str(exc)]:
        m = re.search(r"(?:site|dist)-packages/([A-Za-z_]\w*)", text) or re.search(
            r"\blib(torch)\w*\.so", text
        )
        if m and m.group(1) not in ("engine", "malleability_tui"):
            return LIBRARIES.get(m.group(1), m.group(1))
    return None


_last_stop_signal: int | None = None
"""The stop signal ``_sigterm`` last turned into a KeyboardInterrupt (sent again if lost)."""


def _sigterm(signum: int, frame: Any) -> None:
    global _last_stop_signal
    _last_stop_signal = signum
    raise KeyboardInterrupt


def _resending_lost_interrupts(previous: Any, active: threading.Event) -> Any:
    """An unraisable hook: a KeyboardInterrupt raised where Python cannot raise (a weakref
    callback, such as importlib's module-lock bookkeeping while torch imports, or a
    ``__del__``) is dropped there with an "Exception ignored" traceback, and the run would
    go on as if no Ctrl-C or ``kill`` had come. This hook prints nothing for it and sends
    the signal again a moment later, from a thread, so that it lands in ordinary code (not
    once ``active`` is cleared: the block has ended and the signal's own handler is back).
    Every other unraisable goes to ``previous``."""

    def hook(unraisable: Any) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            sig = _last_stop_signal or signal.SIGINT

            def send() -> None:
                if active.is_set():
                    os.kill(os.getpid(), sig)

            again = threading.Timer(0.05, send)
            again.daemon = True
            again.start()
            return
        previous(unraisable)

    return hook


STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""Signals that end a run as "interrupted", like Ctrl-C: a ``kill`` and an SSH drop."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt (in the main thread) while the block runs,
    and an interrupt that lands where Python drops it is sent again
    (``_resending_lost_interrupts``)."""
    old: dict[int, Any] = {}
    try:
        for sig in STOP_SIGNALS:
            old[sig] = signal.signal(sig, _sigterm)
    except ValueError:  # not the main thread
        yield
        return
    global _last_stop_signal
    _last_stop_signal = None
    previous_hook = sys.unraisablehook
    active = threading.Event()
    active.set()
    sys.unraisablehook = _resending_lost_interrupts(previous_hook, active)
    try:
        yield
    finally:
        active.clear()
        sys.unraisablehook = previous_hook
        for sig, handler in old.items():
            signal.signal(sig, handler)


def forget_caught_interrupt() -> None:
    """Clear CPython's "unhandled KeyboardInterrupt" flag before the process exits.

    A Ctrl-C or SIGTERM that lands inside a string ``exec`` (``dataclasses`` builds methods
    that way, hundreds of them while torch imports) sets a flag that no later ``except``
    clears; under ``python -m`` the interpreter then ends the process by SIGINT (exit -2)
    in place of the 130 the boundary chose. Every string ``exec`` resets the flag at its
    start, so one harmless ``exec`` at the very end puts the boundary's exit code back.
    A KeyboardInterrupt that really escapes is still reported: this runs in a ``finally``
    around code that already turns it into exit 130.
    """
    try:
        exec("pass", {})  # a constant string: the point is the string exec itself
    except MemoryError:  # out of address space (``ulimit -v``): the error is said already
        pass


def working_dir_problem() -> str | None:
    """Why this process cannot work in its working directory (None when it can): the
    folder was deleted (or made unreadable) after the shell entered it. Checked before
    anything loads: PyTorch's MKL otherwise dies with "Cannot load libtorch_cpu.so", and
    relative paths (the runs folder, --out) would point nowhere."""
    try:
        os.getcwd()
    except OSError as e:
        what = (
            "no longer exists"
            if isinstance(e, FileNotFoundError)
            else f"is unusable ({e.strerror})"
        )
        return f"the working directory {what}: cd to an existing folder and run it again"
    return None


def terminal_problem() -> str | None:
    """Why this process cannot draw a full-screen app (None when it can): stdin or stdout
    not a terminal (``</dev/null``, a pipe) or ``TERM=dumb``; Textual would draw escape
    codes into it forever."""
    for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout)):
        try:
            tty = stream is not None and stream.isatty()
        except (OSError, ValueError):
            tty = False
        if not tty:
            return f"{name} is not a terminal"
    if os.environ.get("TERM", "") == "dumb":
        return "TERM=dumb cannot draw it"
    return None
