"""Typer parameters made from the run options' declarations (``malleability_tui.options``).

A command lists the options it takes (``@with_options(*HEADLESS_OPTIONS)``) and declares
one parameter ``given: Given`` where they belong in its help; typer then sees one option
per declaration (flag, short flag, type, default, help) in that place, and the command
receives their values as ``given`` (option name → value as typed, None where not given),
which ``options.spec_changes`` and ``options.given_flags`` turn into spec changes and
error messages in the user's own flags. Adding a run option is one ``RunOption``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from malleability_tui.options import CLI_TYPES, RunOption

Given = dict[str, Any]
"""The declared options' values a command receives: option name → value (None: not given)."""

R = TypeVar("R")


def parameter(o: RunOption) -> inspect.Parameter:
    """The typer parameter of ``o``: ``--flag`` (and its short flag; a bool both
    ``--flag/--no-flag``), its type, default and help."""
    decls = [f"{o.flag}/--no-{o.flag[2:]}" if o.kind == "bool" else o.flag]
    decls += [o.short] if o.short else []
    typ = o.cli_type or CLI_TYPES.get(o.kind, str)
    return inspect.Parameter(
        o.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(o.default, *decls, help=o.help),
        annotation=typ | None,
    )


def with_options(*options: RunOption) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Decorator: the command takes ``options`` as typer options, in place of its
    ``given`` parameter, and is called with their values as ``given`` (module docstring)."""
    names = [o.name for o in options]

    def deco(fn: Callable[..., R]) -> Callable[..., R]:
        sig = inspect.signature(fn, eval_str=True)
        params = list(sig.parameters.values())
        at = [p.name for p in params].index("given")
        clash = set(names) & set(sig.parameters)
        if clash:
            raise TypeError(f"{fn.__name__}: parameters declared twice: {sorted(clash)}")
        made = [parameter(o) for o in options]
        own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]

        @functools.wraps(fn)
        def command(**kw: Any) -> R:
            given = {n: kw.pop(n, None) for n in names}
            return fn(given=given, **kw)

        new = [*own[:at], *made, *own[at + 1 :]]
        command.__signature__ = sig.replace(parameters=new)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in new}
        return command

    return deco


__all__ = ["Given", "parameter", "with_options"]
