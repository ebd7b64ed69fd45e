"""Typed run specs, the event stream, the run store and the experiment registry.

``run(spec)`` yields events; ``RunStore`` writes them to a run directory;
``execute(spec, run_dir)`` is the loop joining the two (every front end's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from engine.run.events import (
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
    from engine.run.spec import RunSpec
    from engine.run.store import RunStore

_EVENTS = (
    "Artifact",
    "CellFinished",
    "Event",
    "Failed",
    "Finished",
    "Log",
    "Metric",
    "Progress",
    "Started",
    "Summary",
    "TableRow",
)


def __getattr__(name: str) -> Any:
    """The event types and RunSpec load on first use (PEP 562): listing the experiments
    (``engine.experiments.registry.describe``) needs neither, nor numpy."""
    if name in _EVENTS:
        from engine.run import events

        return getattr(events, name)
    if name == "RunSpec":
        from engine.run.spec import RunSpec

        return RunSpec
    raise AttributeError(f"module 'engine.experiments' has no attribute {name!r}")


def run(spec: RunSpec, **kwargs: Any) -> Iterator[Event]:
    """See ``engine.experiments.runner.run``."""
    from engine.experiments.runner import run as _run

    return _run(spec, **kwargs)


def execute(spec: RunSpec, run_dir: str | Path, **kwargs: Any) -> RunStore:
    """See ``engine.experiments.runner.execute`` (the one run loop)."""
    from engine.experiments.runner import execute as _execute

    return _execute(spec, run_dir, **kwargs)


__all__ = [
    "Artifact",
    "CellFinished",
    "Event",
    "Failed",
    "Finished",
    "Log",
    "Metric",
    "Progress",
    "RunSpec",
    "Started",
    "Summary",
    "TableRow",
    "execute",
    "run",
]
