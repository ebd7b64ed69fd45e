"""``malleability runs list|show`` and ``malleability export``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from malleability_tui.cli.common import console, die, expected_errors
from malleability_tui.cli.render import LONG_TABLES, WIDTH, print_headlines, print_table
from malleability_tui.cli.sources import TrackingUriOpt, track_run, tracker_of
from malleability_tui.text import int_list, model_names, short_time

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
    from engine.run.runs import find_run

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
    """List past runs with their experiment, data set, status and start time."""
    from engine.run.paths import runs_root
    from engine.run.runs import list_runs

    where = runs_root(root)
    if where.exists() and not where.is_dir():
        die(f"invalid --root {str(where)!r}: a folder of runs (this is a file)")
    rows = list_runs(where)
    if not rows:
        console.print(f"no runs under {runs_root(root)}", highlight=False)
        return
    console.print(runs_table(rows))
    for r in rows:
        if r["damage"]:
            console.print(f"[yellow]{r['name']}[/]: {r['damage']}", highlight=False, soft_wrap=True)


LISTING = ("name", "experiment", "dataset", "status", "start", "device")


def runs_table(rows: list[Any], width: int = WIDTH) -> Table:
    """The ``runs list`` table: the full run name and a short start time; the columns at
    the right that would not fit ``width`` are left out (``runs show`` has them all)."""
    from rich.console import Console

    cells = [{**r, "start": short_time(r["start"])} for r in rows]
    cols = list(LISTING)
    while True:
        t = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for c in cols:
            t.add_column(c, no_wrap=True)
        for r in cells:
            t.add_row(*(str(r[c]) for c in cols))
        if len(cols) <= 2 or Console(width=10_000).measure(t).maximum <= width:
            return t
        cols.pop()


@app.command("show")
def show_cmd(
    run: Annotated[str, typer.Argument(help="Run directory or its name under the runs folder.")],
    root: Annotated[Path | None, typer.Option(help="Runs folder.")] = None,
) -> None:
    """Show a run's spec, status, tables and headline numbers."""
    from engine.run.runs import read_run

    with expected_errors():
        data = read_run(resolve_run(run, root))
    for line in run_lines(data):
        console.print(line, highlight=False, markup=False)
    for name, rows in data["tables"].items():
        if name in LONG_TABLES:
            console.print(f"{name}: {len(rows)} rows ({name}.csv)", highlight=False)
        elif rows:
            print_table(console, name, rows)
    print_headlines(console, data["summary"])


def run_lines(data: dict[str, Any]) -> list[str]:
    """The head of ``runs show``: the path, then one short ``key value`` line each."""
    env, spec = data["env"], data["spec"]
    model, dd = spec.get("model", {}), spec.get("data", {})
    start = short_time(env.get("start_time"))
    return [
        str(data["path"]),
        f"  status {env.get('status', '?')} · device {env.get('device', '?')} · started {start}",
        f"  experiment {spec.get('experiment')} · dataset {dd.get('name')}"
        f" · n_train {dd.get('n_train')} · n_test {dd.get('n_test')}",
        f"  models {model_names(model.get('kinds'))} · widths {int_list(model.get('widths'))}"
        f" · seeds {int_list(spec.get('seeds'))}",
    ]


def export_cmd(
    run: Annotated[str, typer.Argument(help="Run directory or its name under the runs folder.")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="csv (the run's CSV files) or json (one file).")
    ] = "csv",
    to: Annotated[
        str | None,  # the text as typed: only the bare word is MLflow, ./mlflow a folder
        typer.Option(
            "--to",
            metavar="PATH",
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
    if to == "mlflow":
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
        from engine.run.runs import export_run

        files = export_run(
            resolve_run(run, root), format, None if to is None else Path(to), force=force
        )
    for f in files:
        console.print(f"wrote {f}", highlight=False)
