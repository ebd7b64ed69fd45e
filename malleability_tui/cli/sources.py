"""Options shared by ``headless`` and ``reproduce`` for run tracking (the data source's
options are run options: ``malleability_tui.options``).

The tracking itself lives in ``engine.tracking`` (one implementation, reading a finished
run directory); this module only declares the flags and calls it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from malleability_tui.cli.common import err_console

TrackOpt = Annotated[
    str | None,
    typer.Option(
        "--track",
        help="Also log the run to a tracker: mlflow (needs the \\[mlflow] extra: pip install 'malleability\\[mlflow]'; docs/guide.md#mlflow).",
    ),
]
TrackingUriOpt = Annotated[
    str | None,
    typer.Option(
        "--tracking-uri",
        help="MLflow tracking URI, e.g. file:./mlruns or http://host:5000 (default: $MLFLOW_TRACKING_URI, else MLflow's own default).",
    ),
]


def tracker_of(track: str | None, uri: str | None) -> Any:
    """The tracker the flags ask for (checked before any work), or None."""
    from engine.tracking import make_tracker

    return make_tracker(track, uri)


def track_run(tracker: Any, path: Path) -> None:
    """Log the finished run directory ``path`` with ``tracker`` (None: nothing)."""
    if tracker is None:
        return
    run_id = tracker.log_run(path)
    err_console.print(f"tracked: {tracker.kind} run {run_id} ({tracker.uri})", highlight=False)
