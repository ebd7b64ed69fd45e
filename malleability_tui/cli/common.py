"""Helpers shared by CLI command groups: one-line errors, list parsing, the console."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from engine.errors import Cancelled, EngineError

console = Console()
err_console = Console(stderr=True)


def die(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` as one line on stderr and exit with ``code``."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def expected_errors() -> Iterator[None]:
    """Turn engine errors and Ctrl-C into one line and a non-zero exit, no traceback."""
    try:
        yield
    except (Cancelled, EngineError) as e:
        msg, code = error_line(e)
        die(msg, code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(130) from None


# -- the error boundary of every front end ------------------------------------------------
# Expected failures (EngineError, an OSError on a named file) become one line on stderr;
# anything else is a bug: one line naming a log file that holds the traceback, never the
# traceback itself on the terminal. SIGTERM is handled like Ctrl-C, so a terminated run
# closes its directory as "interrupted".

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
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
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
    log = write_crash_log(exc)
    where = f"traceback in {log}" if log else "no log could be written"
    msg = " ".join(str(exc).split())[:200]
    return f"internal error {type(exc).__name__}: {msg} ({where}; please report it)", EXIT_BUG


def _sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt (in the main thread) while the block runs."""
    try:
        old = signal.signal(signal.SIGTERM, _sigterm)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


class GuardedGroup(TyperGroup):
    """The top-level command group: every command runs inside the error boundary."""

    def invoke(self, ctx: typer.Context) -> Any:
        with sigterm_as_interrupt():
            try:
                return super().invoke(ctx)
            except (typer.Exit, typer.Abort, typer.TyperException):
                raise
            except KeyboardInterrupt:
                err_console.print("interrupted")
                raise typer.Exit(130) from None
            except Exception as e:  # noqa: BLE001 - the boundary: one line, never a traceback
                msg, code = error_line(e)
                err_console.print(
                    f"[bold red]error:[/] {escape(msg)}", highlight=False, soft_wrap=True
                )
                raise typer.Exit(code) from None


def _distinct(vals: tuple, text: str, option: str) -> tuple:
    """Every list option takes each value once: a repeat is refused, never run twice."""
    seen: set = set()
    for v in vals:
        if v in seen:
            die(f"invalid {option} {text!r}: each value once ({v} is repeated)")
        seen.add(v)
    return vals


def parse_ints(text: str | None, option: str) -> tuple[int, ...] | None:
    """'16,1024' → (16, 1024); a clear error for anything else (a repeated value included)."""
    if text is None:
        return None
    try:
        vals = tuple(int(t) for t in text.replace(" ", "").split(",") if t)
    except ValueError:
        die(f"invalid {option} {text!r}: comma-separated integers, e.g. 16,1024")
    if not vals:
        die(f"invalid {option} {text!r}: at least one integer")
    return _distinct(vals, text, option)


def parse_floats(text: str | None, option: str) -> tuple[float, ...] | None:
    """'0.1,0.3' → (0.1, 0.3)."""
    if text is None:
        return None
    try:
        vals = tuple(float(t) for t in text.replace(" ", "").split(",") if t)
    except ValueError:
        die(f"invalid {option} {text!r}: comma-separated numbers, e.g. 0.1,0.3")
    if not vals:
        die(f"invalid {option} {text!r}: at least one number")
    return _distinct(vals, text, option)


def parse_names(text: str | None, option: str = "list") -> tuple[str, ...] | None:
    """'fgsm,pgd' → ('fgsm', 'pgd')."""
    if text is None:
        return None
    return _distinct(tuple(t.strip().lower() for t in text.split(",") if t.strip()), text, option)
