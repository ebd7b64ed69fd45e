"""Run tracking: log a finished run directory to an experiment tracker (MLflow).

Off by default and never required. The tracker reads the run directory (the contract
with users: spec.toml, events.jsonl, the CSVs, summary.json, figures/), so one
implementation serves ``headless --track``, ``reproduce --track`` and ``export --to
mlflow``, and a run tracked later logs exactly what a run tracked live would.
"""

from __future__ import annotations

import os
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
    check_server(uri or os.environ.get("MLFLOW_TRACKING_URI"))
    from engine.tracking.mlflow import MlflowTracker

    return MlflowTracker(uri)


SERVER_PORTS = {"http": 80, "https": 443, "postgresql": 5432, "mysql": 3306, "mssql": 1433}
"""Tracking URI schemes that name a server (the default port of each): MLflow's client
retries an unreachable one for minutes, silently, so it is tried first."""


def check_server(uri: str | None) -> None:
    """ConfigError (one line, within ``CONNECT_TIMEOUT_S``) when ``uri`` names a tracking
    server or database (``SERVER_PORTS``) that does not accept a TCP connection. Other
    URIs (a file store, sqlite:, databricks) and None pass: MLflow itself checks them.
    Needs no MLflow, so the refusal is the same with or without the extra."""
    from urllib.parse import urlsplit

    if not uri:
        return
    try:
        parts = urlsplit(uri.strip())
        scheme = parts.scheme.split("+", 1)[0].lower()  # postgresql+psycopg2
        host, port = parts.hostname, parts.port
    except ValueError as e:  # a port that is not a number, a bad IPv6 literal
        raise ConfigError("tracking-uri", uri, f"a tracking URI ({e})") from None
    if scheme not in SERVER_PORTS:
        return
    if not host:
        raise ConfigError("tracking-uri", uri, f"a {scheme}://host[:port] URI (it names no host)")
    from engine.run.executors import unreachable

    why = unreachable(host, port or SERVER_PORTS[scheme])
    if why is not None:
        raise ConfigError(
            "tracking-uri",
            uri,
            f"a reachable MLflow tracking server ({host}:{port or SERVER_PORTS[scheme]}: {why}; "
            "start one with: mlflow server, or use file:./mlruns)",
        )


__all__ = ["SERVER_PORTS", "TRACKERS", "Tracker", "check_server", "make_tracker"]
