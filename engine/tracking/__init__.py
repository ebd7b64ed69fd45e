"""Run tracking: log a finished run directory to an experiment tracker (MLflow).

Off by default and never required. The tracker reads the run directory (the contract
with users: spec.toml, events.jsonl, the CSVs, summary.json, figures/), so one
implementation serves ``headless --track``, ``reproduce --track`` and ``export --to
mlflow``, and a run tracked later logs exactly what a run tracked live would.
"""

from __future__ import annotations

from typing import Protocol

from engine.errors import ConfigError

TRACKERS = ("mlflow",)


class Tracker(Protocol):
    """Something that logs a run directory and returns the tracker's run id."""

    kind: str
    uri: str

    def log_run(self, run_dir: object) -> str: ...


def make_tracker(kind: str | None, uri: str | None = None) -> Tracker | None:
    """The tracker named ``kind`` (None: no tracking), checked before any work is done:
    an unknown name or a missing optional package is a ConfigError (one line)."""
    if kind is None:
        if uri is not None:
            raise ConfigError("tracking-uri", uri, "only with --track mlflow")
        return None
    if kind.strip().lower() not in TRACKERS:
        raise ConfigError("track", kind, f"one of {', '.join(TRACKERS)}")
    from engine.tracking.mlflow import MlflowTracker

    return MlflowTracker(uri)


__all__ = ["TRACKERS", "Tracker", "make_tracker"]
