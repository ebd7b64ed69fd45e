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


class SafeStream:
    """stdout (or stderr) as the CLI's consoles write it: text the stream cannot encode
    (``LC_ALL=C``, ``PYTHONIOENCODING=ascii``) falls back to ASCII (``text.encodable``), and
    a stream that fails (its reader gone, a full disk, a file-size limit) is dropped and
    remembered in ``failed``: printing never costs a run; the command says so at its end.
    The stream is looked up at each write (tests swap ``sys.stdout``)."""

    def __init__(self, *, stderr: bool = False) -> None:
        self.stderr = stderr
        self.failed: OSError | None = None

    @property
    def target(self) -> Any:
        import sys

        f = sys.stderr if self.stderr else sys.stdout
        return getattr(f, "rich_proxied_file", f)  # under a live progress bar: the real one

    @property
    def encoding(self) -> str:
        return getattr(self.target, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        try:
            return bool(self.target.isatty())
        except (OSError, ValueError, AttributeError):
            return False

    def fileno(self) -> int:
        return int(self.target.fileno())

    def write(self, text: str) -> int:
        if self.failed is None:
            f = self.target
            try:
                try:
                    f.write(text)
                except UnicodeEncodeError:
                    from malleability_tui.text import encodable

                    f.write(encodable(text, getattr(f, "encoding", None)))
            except OSError as e:
                self._fail(e)
        return len(text)

    def flush(self) -> None:
        if self.failed is None:
            try:
                self.target.flush()
            except OSError as e:
                self._fail(e)

    def _fail(self, e: OSError) -> None:
        self.failed = e
        silence(self.target)

    def reset(self) -> None:
        """Forget a failure (a test's next command gets a fresh stream)."""
        self.failed = None


class StreamConsole(Console):
    """A console that lays text out as its stream will print it: where the stream cannot
    encode a sign (an ASCII stdout, see ``SafeStream``), a string is spelled in ASCII
    (``text.encodable``: ``κ`` → ``kappa``) before rich measures and wraps it, so a table
    laid out for 80 columns is still 80 columns once printed. (Text objects are not
    rewritten: the CLI hands rich strings, ``text_for`` spells the others.)"""

    def render_str(self, text: str, **kw: Any) -> Any:
        return super().render_str(text_for(self, text), **kw)


def text_for(console: Console, text: str) -> str:
    """``text`` as ``console``'s stream prints it (``text.encodable``)."""
    from malleability_tui.text import encodable

    return encodable(text, console.encoding)


out_stream = SafeStream()
err_stream = SafeStream(stderr=True)
console = StreamConsole(file=out_stream)  # type: ignore[arg-type]
err_console = StreamConsole(file=err_stream, stderr=True)  # type: ignore[arg-type]


def die(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` as one line on stderr and exit with ``code``."""
    error_out(message)
    raise typer.Exit(code)


def error_out(message: str) -> None:
    """``error: message`` on stderr, in plain text when rich cannot (rich imports modules
    as it renders, which fails under a memory limit: the line must still go out)."""
    try:
        err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    except MemoryError:
        import sys

        sys.stderr.write(f"error: {message}\n")


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


def silence(stream: Any) -> None:
    """Point a failed stream's file descriptor at /dev/null, so Python's flush at exit
    does not fail a second time ("Exception ignored ... BrokenPipeError")."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's capture)
        pass


def closed_stdout() -> NoReturn:
    """Exit quietly when stdout's reader has gone (``malleability ... --help | head``): no
    message, and no second BrokenPipeError when Python flushes stdout at exit."""
    import sys

    silence(sys.stdout)
    raise SystemExit(BROKEN_PIPE_EXIT)


def stdout_failure(code: int) -> int:
    """After a command: if stdout failed while it ran (``| head``, a full disk, ``ulimit
    -f``), say so in one line on stderr and return a non-zero exit status; else ``code``."""
    e = out_stream.failed
    if e is None:
        return code
    out_stream.reset()
    what = e.strerror or type(e).__name__
    err_console.print(
        f"[bold red]error:[/] stdout failed ({escape(what)}): what was printed after that is "
        "lost; the command itself went on to its end",
        highlight=False,
        soft_wrap=True,
    )
    return code or BROKEN_PIPE_EXIT


def plain_type(param: Any, ctx: Any) -> str | None:
    """The type column of typer's help: empty for a flag, ``PATH`` / ``INT`` / ``TEXT``
    for a value (not typer's ``<bool>`` after ``--help`` or ``<str>`` after a name)."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    if getattr(param, "param_type_name", "") == "argument":
        return None  # the argument's name says it
    if isinstance(getattr(param, "metavar", None), str):
        return param.metavar  # an option that takes text but means a path (export --to)
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
    TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign,assignment]


def usage_name(param: Any) -> str:
    """An argument as the usage line shows it: ``RUN`` when required, ``[RUN]`` when not,
    ``RUN...`` for several (click's convention; typer 0.29 prints ``{run}``)."""
    name = str(getattr(param, "metavar", None) or param.name or "").upper()
    if getattr(param, "nargs", 1) != 1:
        name += "..."
    return name if getattr(param, "required", False) else f"[{name}]"


class GuardedGroup(TyperGroup):
    """The top-level command group: every command runs inside the error boundary."""

    def invoke(self, ctx: ClickContext) -> Any:
        out_stream.reset()
        with sigterm_as_interrupt():
            try:
                result = self._guarded(ctx)
            except typer.Exit as e:
                raise typer.Exit(stdout_failure(e.exit_code)) from None
            if (code := stdout_failure(0)) != 0:
                raise typer.Exit(code)
            return result

    def _guarded(self, ctx: ClickContext) -> Any:
        """The command, with every exception but an exit turned into one line."""
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
            error_out(msg)
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
        from engine.errors import shown

        die(f"invalid {option} {shown(text)}: {e}")


def parse_ints(text: str | None, option: str) -> tuple[int, ...] | None:
    """'16,1024' → (16, 1024); a clear error for anything else (a repeated value included)."""
    return _parsed("ints", text, option)


def parse_floats(text: str | None, option: str) -> tuple[float, ...] | None:
    """'0.1,0.3' → (0.1, 0.3)."""
    return _parsed("floats", text, option)


def parse_names(text: str | None, option: str = "list") -> tuple[str, ...] | None:
    """'fgsm,pgd' → ('fgsm', 'pgd')."""
    return _parsed("names", text, option)
