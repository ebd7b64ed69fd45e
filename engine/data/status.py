"""``DatasetStatus``: where a data set was found and what it holds (``data list`` /
``data show``), for the built-ins (``engine.data.load``) and the sources alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class DatasetStatus:
    """Where a data set was found and which split sizes are available (for ``data list``)."""

    name: str
    description: str
    found: bool
    path: Path | None
    """The folder holding the files; None when not found or built in."""
    builtin: bool
    splits: dict[str, int] = field(default_factory=dict)
    """Available split sizes (IDX: read from the headers only)."""
    official: dict[str, int] = field(default_factory=dict)
    how_to_get: str = ""
    problem: str | None = None
    """Why the files found cannot be read, if they cannot."""

    @property
    def complete(self) -> bool:
        """All official splits at their official sizes."""
        return self.found and self.splits == self.official
