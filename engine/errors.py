"""The engine's one error hierarchy.

Expected failures (bad config, missing data, a diverging run, a cancelled job)
raise one of these; the CLI prints ``str(err)`` as one line and exits non-zero,
the TUI shows it in a dialog. Anything else is a bug and may show a traceback.
"""

from __future__ import annotations

from typing import Any


class EngineError(Exception):
    """Base class of every expected engine failure."""


class ConfigError(EngineError, ValueError):
    """An invalid option: names the field, the value and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str, *, where: str | None = None) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.where = where
        super().__init__(f"{where + ': ' if where else ''}invalid {field}={value!r}: {allowed}")


class DatasetError(EngineError):
    """A data set that is missing, corrupt, unknown or cannot give the subset asked for."""


class DivergedError(EngineError):
    """Training produced a non-finite loss."""


class Cancelled(EngineError):
    """The job was cancelled by the user; what finished is kept."""
