"""Helpers shared by CLI command groups: one-line errors, list parsing, the console."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from engine.errors import Cancelled, EngineError
from malleability_tui.boundary import error_line, sigterm_as_interrupt

if TYPE_CHECKING:
    # the Context TyperGroup.invoke declares and is called with (recent typer vendors
    # click as typer._click; typer.Context is a subclass, too narrow for an override)
    from typer._click.core import Context as ClickContext

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


class GuardedGroup(TyperGroup):
    """The top-level command group: every command runs inside the error boundary."""

    def invoke(self, ctx: ClickContext) -> Any:
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
