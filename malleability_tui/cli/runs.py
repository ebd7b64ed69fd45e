"""``malleability runs list|show`` and ``malleability export``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from engine.run.paths import runs_root
from engine.run.runs import export_run, find_run, list_runs, read_run
from malleability_tui.cli.common import console, die, expected_errors
from malleability_tui.cli.render import LONG_TABLES, table_of
from malleability_tui.cli.sources import TrackingUriOpt, track_run, tracker_of

app = typer.Typer(help="Browse past runs.", no_args_is_help=True)


RunOrReproduce = Annotated[
    str,
    typer.Argument(
        help="Run or reproduce directory (or its name under $MALLEABILITY_RUNS or ./runs)."
    ),
]
"""The argument of ``report`` and ``figures`` (resolved by ``resolve_run(..., reproduce=True)``)."""


def resolve_run(run: str, root: Path | None, *, reproduce: bool = False) -> Path:
    """A run directory given as a path or as a name under the runs root (with
    ``reproduce``, a reproduce folder too); one line and exit 2 when there is none."""
    found = find_run(run, root, reproduce=reproduce)
    if found is None:
        die(f"no run directory {run!r}: pass a path or a name listed by `malleability runs list`")
    return found


@app.command("list")
def list_cmd(
    root: Annotated[
        Path | None, typer.Option(help="Runs folder (default $MALLEABILITY_RUNS or ./runs).")
    ] = None,
) -> None:
    """List past runs with their experiment, data set and status."""
    rows = list_runs(runs_root(root))
    if not rows:
        console.print(f"no runs under {runs_root(root)}")
        return
    t = Table(header_style="bold")
    for c in ("name", "experiment", "dataset", "status", "start", "device"):
        t.add_column(c)
    for r in rows:
        t.add_row(
            *(str(r[c]) for c in ("name", "experiment", "dataset", "status", "start", "device"))
        )
    console.print(t)
    for r in rows:
        if r["damage"]:
            console.print(f"[yellow]{r['name']}[/]: {r['damage']}", highlight=False, soft_wrap=True)


@app.command("show")
def show_cmd(
    run: Annotated[str, typer.Argument(help="Run directory or its name under the runs folder.")],
    root: Annotated[Path | None, typer.Option(help="Runs folder.")] = None,
) -> None:
    """Show a run's spec, status, tables and headline numbers."""
    with expected_errors():
        data = read_run(resolve_run(run, root))
    env = data["env"]
    console.print(
        f"[bold]{data['path']}[/]  status={env.get('status', '?')}  device={env.get('device', '?')}",
        highlight=False,
    )
    spec = data["spec"]
    console.print(
        f"experiment={spec.get('experiment')}  dataset={spec.get('data', {}).get('name')}  "
        f"seeds={spec.get('seeds')}  widths={spec.get('model', {}).get('widths')}",
        highlight=False,
    )
    for name, rows in data["tables"].items():
        if name in LONG_TABLES:
            console.print(f"{name}: {len(rows)} rows ({name}.csv)")
        elif rows:
            console.print(table_of(name, rows))
    for section, val in data["summary"].items():
        if isinstance(val, dict) and val.get("headline"):
            console.print(f"[bold]{section}[/]")
            lines = val["headline"]
            for ln in [lines] if isinstance(lines, str) else lines:
                console.print(f"  {ln}", highlight=False)


def export_cmd(
    run: Annotated[str, typer.Argument(help="Run directory or its name under the runs folder.")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="csv (the run's CSV files) or json (one file).")
    ] = "csv",
    to: Annotated[
        Path | None,
        typer.Option(
            "--to",
            help="Destination folder (default export/<run name>); the word mlflow logs the run to MLflow instead (a folder of that name: ./mlflow).",
        ),
    ] = None,
    root: Annotated[Path | None, typer.Option(help="Runs folder.")] = None,
    tracking_uri: TrackingUriOpt = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write into a folder that already holds files (same names are overwritten).",
        ),
    ] = False,
) -> None:
    """Export a run's results for your own plots and papers (or to MLflow: --to mlflow)."""
    if to is not None and str(to) == "mlflow":
        with expected_errors():
            tracker = tracker_of("mlflow", tracking_uri)
            path = resolve_run(run, root, reproduce=True)
            track_run(tracker, path)
        console.print(f"logged {path} to MLflow ({tracker.uri})", highlight=False)
        return
    if tracking_uri is not None:
        die("--tracking-uri goes with --to mlflow")
    if format not in ("csv", "json"):
        die(f"invalid --format {format!r}: csv or json")
    with expected_errors():
        files = export_run(resolve_run(run, root), format, to, force=force)
    for f in files:
        console.print(f"wrote {f}", highlight=False)
