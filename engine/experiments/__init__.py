"""Typed run specs, the event stream, the run store and the experiment registry.

``run(spec)`` yields events; ``RunStore`` writes them to a run directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.experiments.events import (
    Artifact,
    CellFinished,
    Event,
    Failed,
    Finished,
    Log,
    Metric,
    Progress,
    Started,
    Summary,
    TableRow,
)
from engine.experiments.spec import RunSpec

if TYPE_CHECKING:
    from collections.abc import Iterator


def run(spec: RunSpec, **kwargs: Any) -> Iterator[Event]:
    """See ``engine.experiments.runner.run``."""
    from engine.experiments.runner import run as _run

    return _run(spec, **kwargs)


__all__ = [
    "Artifact", "CellFinished", "Event", "Failed", "Finished", "Log", "Metric", "Progress",
    "RunSpec", "Started", "Summary", "TableRow", "run",
]
