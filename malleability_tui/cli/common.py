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


BROKEN_PIPE_EXIT = 1
"""The exit status after the reader of stdout went away: typer's own (it handles a broken
pipe while it parses, this module while a command runs)."""


def closed_stdout() -> NoReturn:
    """Exit quietly when stdout's reader has gone (``malleability ... --help | head``): no
    message, and no second BrokenPipeError when Python flushes stdout at exit."""
    import os
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test's capture)
        pass
    raise SystemExit(BROKEN_PIPE_EXIT)


def plain_type(param: Any, ctx: Any) -> str | None:
    """The type column of typer's help: empty for a flag, ``PATH`` / ``INT`` / ``TEXT``
    for a value (not typer's ``<bool>`` after ``--help`` or ``<str>`` after a name)."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    if getattr(param, "param_type_name", "") == "argument":
        return None  # the argument's name says it
    try:
        name = str(param.bare_type()).lower()
    except Exception:  # noqa: BLE001 - help text only: a typer without bare_type says TEXT
        name = "str"
    return {"int": "INT", "float": "FLOAT", "path": "PATH", "bool": None}.get(name, "TEXT")


def use_plain_types() -> None:
    """Show ``plain_type`` in this process's help (the CLI's, never the TUI's). Typer builds
    its parameters itself, so its display method is the one place this can be said."""
    from typer.core import TyperArgument, TyperOption

    TyperOption.display_type_rich = plain_type  # type: ignore[method-assign,assignment]
    TyperArgument.display_type_rich = plain_type  # type: ignore[method-assign,assignment]


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
            except BrokenPipeError:
                closed_stdout()
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
