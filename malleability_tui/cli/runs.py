"""``malleability runs list|show`` and ``malleability export``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from engine.experiments.store import read_run
from malleability_tui.cli.common import console, die, expected_errors
from malleability_tui.cli.render import LONG_TABLES, table_of

app = typer.Typer(help="Browse past runs.", no_args_is_help=True)


def runs_root(root: Path | None) -> Path:
    return Path(root or os.environ.get("MALLEABILITY_RUNS", "runs"))


def resolve_run(run: str, root: Path | None) -> Path:
    """A run directory given as a path or as a name under the runs root."""
    p = Path(run)
    if (p / "spec.toml").exists():
        return p
    q = runs_root(root) / run
    if (q / "spec.toml").exists():
        return q
    die(f"no run directory {run!r}: pass a path or a name listed by `malleability runs list`")


def list_runs(root: Path) -> list[dict[str, Any]]:
    """Summaries of the run directories under ``root``, newest first.

    A damaged run is listed too, with ``damage`` (its first problem) and status "damaged".
    """
    out: list[dict[str, Any]] = []
    if not root.is_dir():
        return out
    for d in sorted(root.iterdir(), reverse=True):
        if not (d / "spec.toml").exists():
            continue
        data = read_run(d, partial=True)
        summ, env = data["summary"], data["env"]
        damage = data["damage"]
        out.append(
            {
                "name": d.name,
                "path": str(d),
                "experiment": summ.get("experiment", data["spec"].get("experiment", "?")),
                "dataset": summ.get("dataset", data["spec"].get("data", {}).get("name", "?")),
                "status": "damaged" if damage else env.get("status", "?"),
                "start": env.get("start_time", ""),
                "device": env.get("device", ""),
                "damage": "; ".join(damage),
            }
        )
    return out


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


def export_run(path: Path, fmt_: str, to: Path | None = None, *, force: bool = False) -> list[Path]:
    """Copy a run's CSVs (csv) or write one JSON of everything (json) into ``to``.

    ``to`` defaults to ``export/<run name>``, so two runs never mix. A folder that already
    holds files (csv) or an existing JSON target is refused unless ``force``. The run is
    read and validated first: a damaged run writes nothing.
    """
    from engine.errors import ConfigError
    from engine.experiments.paths import check_folder_target, make_folder

    to = Path("export") / path.name if to is None else to
    check_folder_target(to, "to")
    src, dst = path.resolve(), to.resolve()
    if dst == src or src in dst.parents:
        raise ConfigError("to", str(to), "a folder outside the run directory")
    data = read_run(path)
    if fmt_ == "csv":
        sources = [
            f
            for f in sorted(path.glob("*.csv"))
            + [path / "spec.toml", path / "summary.json", path / "env.json"]
            if f.is_file()
        ]
        if not force and to.is_dir() and any(to.iterdir()):
            raise ConfigError(
                "to",
                str(to),
                "a new or empty folder (it holds files; pass --force to overwrite them)",
            )
        make_folder(to, "to")
        written = []
        for f in sources:
            shutil.copy2(f, to / f.name)
            written.append(to / f.name)
        return written
    target = to / f"{path.name}.json"
    if target.exists() and not force:
        raise ConfigError(
            "to", str(target), "a file that does not exist yet (pass --force to overwrite it)"
        )
    make_folder(to, "to")
    from engine.experiments.store import atomic_write

    atomic_write(target, json.dumps(data, indent=2) + "\n")
    return [target]


def export_cmd(
    run: Annotated[str, typer.Argument(help="Run directory or its name under the runs folder.")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="csv (the run's CSV files) or json (one file).")
    ] = "csv",
    to: Annotated[
        Path | None, typer.Option("--to", help="Destination folder (default export/<run name>).")
    ] = None,
    root: Annotated[Path | None, typer.Option(help="Runs folder.")] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write into a folder that already holds files (same names are overwritten).",
        ),
    ] = False,
) -> None:
    """Export a run's results for your own plots and papers."""
    if format not in ("csv", "json"):
        die(f"invalid --format {format!r}: csv or json")
    with expected_errors():
        files = export_run(resolve_run(run, root), format, to, force=force)
    for f in files:
        console.print(f"wrote {f}", highlight=False)
