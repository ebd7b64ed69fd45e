"""Source names and options (``engine.data.sources``): what the loaders of each kind
share, apart from the package so the loaders never import the package back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.errors import DatasetError

KINDS = ("npz", "folder", "hf")
"""Source prefixes: ``npz:FILE``, ``folder:DIR``, ``hf:DIR``."""


@dataclass(frozen=True)
class SourceOptions:
    """How a source's images become arrays (the spec's ``data.*`` source fields)."""

    image_size: int | None = None
    """Side of the square images, resized with Pillow; None: as found (all must agree)."""
    mode: str | None = None
    """Pillow mode "L" (grey) or "RGB"; None: as found (all must agree, L or RGB)."""
    image_column: str | None = None
    """hf: the image column; None: "image", else "img"."""
    label_column: str = "label"
    """hf: the label column."""


@dataclass(frozen=True)
class Source:
    """A parsed source name: ``kind`` in KINDS and the ``path`` after the prefix."""

    kind: str
    path: Path

    @property
    def name(self) -> str:
        """The canonical name ``kind:path`` (the path as given, ``~`` expanded)."""
        return f"{self.kind}:{self.path}"


def is_source(name: object) -> bool:
    """True for ``npz:…`` / ``folder:…`` / ``hf:…`` names (the built-ins have no colon)."""
    return isinstance(name, str) and name.split(":", 1)[0].strip().lower() in KINDS and ":" in name


def source_problem(name: str) -> str | None:
    """Why ``name`` is not a well-formed source name (prefix and a path), or None."""
    kind, sep, rest = name.partition(":")
    if not sep or kind.strip().lower() not in KINDS:
        return f"{name!r}: a source is {', '.join(k + ':PATH' for k in KINDS)}"
    if not rest.strip():
        return f"{name!r}: a path after {kind}:"
    return None


def parse_source(name: str) -> Source:
    """``"folder:~/pics"`` → Source("folder", Path("/home/me/pics")); DatasetError if malformed."""
    problem = source_problem(name)
    if problem is not None:
        raise DatasetError(f"data source {problem}")
    kind, _, rest = name.partition(":")
    return Source(kind.strip().lower(), Path(rest.strip()).expanduser())
