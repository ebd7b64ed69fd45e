"""Helpers shared by CLI command groups: one-line errors, list parsing, the console."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

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
    except Cancelled as e:
        die(f"cancelled: {e}", 130)
    except EngineError as e:
        die(str(e), 1)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(130) from None


def parse_ints(text: str | None, option: str) -> tuple[int, ...] | None:
    """'16,1024' → (16, 1024); a clear error for anything else."""
    if text is None:
        return None
    try:
        vals = tuple(int(t) for t in text.replace(" ", "").split(",") if t)
    except ValueError:
        die(f"invalid {option} {text!r}: comma-separated integers, e.g. 16,1024")
    if not vals:
        die(f"invalid {option} {text!r}: at least one integer")
    return vals


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
    return vals


def parse_names(text: str | None) -> tuple[str, ...] | None:
    """'fgsm,pgd' → ('fgsm', 'pgd')."""
    if text is None:
        return None
    return tuple(t.strip().lower() for t in text.split(",") if t.strip())

