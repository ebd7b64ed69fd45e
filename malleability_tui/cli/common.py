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


def _parsed(kind: str, text: str | None, option: str) -> Any:
    """``text`` through the one option parser (``malleability_tui.options.parse_value``);
    a parse error is the one-line ``invalid OPTION 'TEXT': what is allowed``."""
    from malleability_tui.options import OptionError, parse_value

    if text is None:
        return None
    try:
        return parse_value(kind, text)
    except OptionError as e:
        die(f"invalid {option} {text!r}: {e}")


def parse_ints(text: str | None, option: str) -> tuple[int, ...] | None:
    """'16,1024' → (16, 1024); a clear error for anything else (a repeated value included)."""
    return _parsed("ints", text, option)


def parse_floats(text: str | None, option: str) -> tuple[float, ...] | None:
    """'0.1,0.3' → (0.1, 0.3)."""
    return _parsed("floats", text, option)


def parse_names(text: str | None, option: str = "list") -> tuple[str, ...] | None:
    """'fgsm,pgd' → ('fgsm', 'pgd')."""
    return _parsed("names", text, option)
