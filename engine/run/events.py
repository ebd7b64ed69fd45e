"""The typed event stream of a run.

Every event is a frozen dataclass whose payload is plain Python scalars, strings,
dicts/lists of those, or CPU numpy arrays, never live tensors, so it can be sent
across threads or processes and written as JSON.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np


def _now() -> float:
    return time.time()


if TYPE_CHECKING:
    from engine.results.tables import Row


@dataclass(frozen=True)
class Event:
    """Base class; ``kind`` is the JSON discriminator."""

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            d[f.name] = to_jsonable(getattr(self, f.name))
        return d


@dataclass(frozen=True)
class Started(Event):
    """A run (or one experiment of it) began."""

    experiment: str
    spec: dict[str, Any]
    time: float = field(default_factory=_now)


@dataclass(frozen=True)
class Progress(Event):
    """``done`` of ``total`` units of ``task`` (``sweep``: cells; ``cell``: epochs or steps)."""

    task: str
    done: int
    total: int
    message: str = ""
    cell: str = ""
    running: int = 0
    """Cells in flight on a parallel executor (0: in-process, one at a time)."""


@dataclass(frozen=True)
class Metric(Event):
    """One point of a live series, e.g. ``train_loss`` or ``kernel_drift`` at ``step``."""

    name: str
    value: float
    step: int
    cell: str = ""


@dataclass(frozen=True)
class TableRow(Event):
    """One row of a results table (a CSV of the run directory), produced by ``cell``."""

    table: str
    row: dict[str, Any]
    cell: str = ""

    @classmethod
    def of(cls, row: Row, cell: str = "") -> TableRow:
        """The event of a typed row (``engine.results.tables``): its table, its values."""
        return cls(row.TABLE, row.to_row(), cell)


@dataclass(frozen=True)
class CellFinished(Event):
    """Every row of ``cell`` has been emitted; ``--resume`` skips it next time."""

    cell: str


@dataclass(frozen=True)
class CellFailed(Event):
    """``cell`` failed on every attempt (``error``: exception class); ``--resume`` reruns it."""

    cell: str
    error: str
    message: str


@dataclass(frozen=True)
class Artifact(Event):
    """A named array or record for plots (e.g. eigenvalues, a drift series, a surface)."""

    name: str
    data: Any
    cell: str = ""


@dataclass(frozen=True)
class Log(Event):
    """A one-line message for the log pane (``level``: info or warning)."""

    message: str
    level: str = "info"


@dataclass(frozen=True)
class Summary(Event):
    """Headline numbers of one experiment (merged into summary.json under ``section``)."""

    section: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Finished(Event):
    """The run ended normally; ``summary`` is the merged summary."""

    summary: dict[str, Any]
    time: float = field(default_factory=_now)


@dataclass(frozen=True)
class Failed(Event):
    """The run stopped on an expected error (``error``: the exception class name)."""

    error: str
    message: str
    time: float = field(default_factory=_now)


EVENT_TYPES: dict[str, type[Event]] = {
    t.__name__: t
    for t in (
        Started,
        Progress,
        Metric,
        TableRow,
        CellFinished,
        CellFailed,
        Artifact,
        Log,
        Summary,
        Finished,
        Failed,
    )
}


def to_jsonable(v: Any) -> Any:
    """Numpy arrays/scalars → lists/floats; NaN/inf → None (JSON has neither)."""
    if isinstance(v, np.ndarray):
        return to_jsonable(v.tolist())
    if isinstance(v, np.generic):
        return to_jsonable(v.item())
    if isinstance(v, float):
        return v if np.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): to_jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_jsonable(x) for x in v]
    return v


def encode_floats(v: Any) -> Any:
    """Like ``to_jsonable`` but NaN and ±inf survive a JSON round trip (as
    ``{"float": "inf"}``), for what a resumed run must read back exactly (``decode_floats``)."""
    if isinstance(v, (np.ndarray, np.generic)):
        return encode_floats(v.tolist())
    if isinstance(v, float) and not np.isfinite(v):
        return {"float": repr(v)}
    if isinstance(v, dict):
        return {str(k): encode_floats(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [encode_floats(x) for x in v]
    return v


def decode_floats(v: Any) -> Any:
    """Inverse of ``encode_floats``."""
    if isinstance(v, dict):
        if set(v) == {"float"} and v["float"] in ("nan", "inf", "-inf"):
            return float(v["float"])
        return {k: decode_floats(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode_floats(x) for x in v]
    return v


def from_json(d: dict[str, Any]) -> Event:
    """Rebuild an event from ``Event.to_json()`` output (arrays come back as lists)."""
    d = dict(d)
    cls = EVENT_TYPES[d.pop("kind")]
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})
