"""The engine's one error hierarchy.

Expected failures (bad config, missing data, a diverging run, a cancelled job)
raise one of these; the CLI prints ``str(err)`` as one line and exits non-zero,
the TUI shows it in a dialog. Anything else is a bug and may show a traceback.
"""

from __future__ import annotations

from typing import Any

SHOWN_CHARS = 60
"""How much of a value an error line echoes back (a 100 KB option stays one short line)."""
SHOWN_PATH_CHARS = 1024
"""How much of a path (a value holding '/') it echoes: a real path is shown whole."""


def shown(value: Any) -> str:
    """``repr(value)`` cut to ``SHOWN_CHARS`` characters with '…' (a path: to
    ``SHOWN_PATH_CHARS``): what error lines echo of a value."""
    r = repr(value)
    limit = SHOWN_PATH_CHARS if "/" in r else SHOWN_CHARS
    return r if len(r) <= limit else r[: limit - 1] + "…"


def needs_extra(extra: str, what: str) -> str:
    """The one install hint for an optional extra, the same words in every front end:
    ``needs the [ray] extra: pip install 'malleability[ray]'`` (``what``: the thing
    that needs it, e.g. "--executor ray")."""
    return f"{what} needs the [{extra}] extra: pip install 'malleability[{extra}]'"


class EngineError(Exception):
    """Base class of every expected engine failure."""


class ConfigError(EngineError, ValueError):
    """An invalid option: names the field, the value and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str, *, where: str | None = None) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.where = where
        super().__init__(
            f"{where + ': ' if where else ''}invalid {field}={shown(value)}: {allowed}"
        )


class DatasetError(EngineError):
    """A data set that is missing, corrupt, unknown or cannot give the subset asked for."""


class DivergedError(EngineError):
    """Training produced a non-finite loss."""


class Cancelled(EngineError):
    """The job was cancelled by the user; what finished is kept."""
