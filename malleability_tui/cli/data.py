"""``malleability data list|fetch|show``: where the data sets are and how to get them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from malleability_tui.cli.common import console, die, expected_errors
from malleability_tui.cli.declared import Given, with_options
from malleability_tui.options import SOURCE_OPTIONS

app = typer.Typer(
    help="Data sets: which are available where, and downloading them.", no_args_is_help=True
)

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Folder holding the files (or its parent); default: $MALLEABILITY_DATA, then the user data dir.",
    ),
]


def format_splits(splits: dict[str, int]) -> str:
    """{'train': 60000, 'test': 10000} → 'train 60,000 · test 10,000'."""
    return " · ".join(f"{k} {v:,}" for k, v in splits.items()) or "-"


@app.command("list")
def list_cmd(data_dir: DataDir = None) -> None:
    """List the data sets: where each was found (or how to get it) and the split sizes there."""
    from engine.data import DATASETS, dataset_status

    table = Table(title="data sets", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("here", no_wrap=True)
    table.add_column("splits here (official when they differ)")
    details: list[str] = []
    with expected_errors():
        for name in DATASETS:
            st = dataset_status(name, data_dir)
            if st.builtin:
                where = "[green]built in[/]"
            elif st.found and st.problem:
                where = "[yellow]damaged[/]"
                details.append(f"{name}: {st.path}: [red]{st.problem}[/]")
            elif st.found:
                where = "[green]found[/]"
                details.append(f"{name}: {st.path}")
            else:
                where = "[red]not found[/]"
                details.append(f"{name}: malleability data fetch {name} (or --data-dir DIR)")
            splits = format_splits(st.splits)
            if st.splits != st.official:
                splits += f" [dim]({format_splits(st.official)})[/]"
            table.add_row(name, where, splits)
            details.append(f"[dim]{name}: {st.description}[/]")
    console.print(table)
    for line in sorted(details, key=lambda d: d.startswith("[dim]")):
        console.print(line, highlight=False)


@app.command("fetch")
def fetch_cmd(
    name: Annotated[
        str, typer.Argument(help="Data set to download (the names: malleability data list).")
    ],
    to: Annotated[
        Path | None,
        typer.Option(
            "--to",
            help="Folder to download into (files go to DIR/<name>); default: $MALLEABILITY_DATA or the user data dir.",
        ),
    ] = None,
    mirror: Annotated[
        list[str] | None,
        typer.Option(
            "--mirror", help="Base URL to try instead of the built-in mirrors (repeatable)."
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1.0, help="Network timeout per request, in seconds.")
    ] = 60.0,
) -> None:
    """Download a data set's original files from its public mirrors and verify their checksums."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from engine.data import default_data_home, get_info
    from engine.data.fetch import fetch

    with expected_errors():
        info = get_info(name)
        dest = to if to is not None else default_data_home()
        tasks: dict[str, TaskID] = {}
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        ) as bar:

            def progress(done: int, total: int | None, filename: str) -> None:
                if filename not in tasks:
                    tasks[filename] = bar.add_task(filename, total=total)
                bar.update(tasks[filename], completed=done, total=total)

            result = fetch(
                info.name, dest, mirrors=mirror or None, progress=progress, timeout=timeout
            )
    if result.note:
        console.print(result.note)
        return
    for f in result.skipped:
        console.print(f"[dim]{f}: already present, checksum ok[/]")
    console.print(
        f"[green]{info.name}[/]: {len(result.downloaded)} file(s) downloaded, "
        f"ready in {result.path}"
    )


@app.command("show")
@with_options(*SOURCE_OPTIONS)
def show_cmd(
    name: Annotated[
        str,
        typer.Argument(
            help="Data set to read (the names: malleability data list), or a source npz:FILE, folder:DIR, hf:DIR."
        ),
    ],
    data_dir: DataDir = None,
    *,
    given: Given,
) -> None:
    """Read every file of a data set (validating it) and print each split's class counts."""
    import numpy as np

    from engine.data import load_raw

    with expected_errors():
        from engine.errors import ConfigError
        from engine.run.spec import DataSpec
        from malleability_tui.options import flag_error, given_flags, spec_changes

        src = {k.removeprefix("data__"): v for k, v in spec_changes(given).items()}
        opts = DataSpec(name=name, **src)
        try:
            opts.check_source_fields((name,))  # a flag the data set would ignore: refused
        except ConfigError as e:  # named by the user's flag, as headless names it
            die(flag_error(e, given_flags(given)) or str(e))
        raw = load_raw(name, data_dir, opts.source_options())
    console.print(raw.name, style="bold", highlight=False, markup=False, soft_wrap=True)
    table = Table()
    table.add_column("class", no_wrap=True)
    for split in raw.splits:
        table.add_column(split, justify="right")
    counts = {
        s: np.bincount(r.labels, minlength=len(raw.class_names)) for s, r in raw.splits.items()
    }
    for c, cname in enumerate(raw.class_names):
        label = str(c) if cname == str(c) else f"{c} {cname}"
        table.add_row(label, *(f"{counts[s][c]:,}" for s in raw.splits))
    table.add_row("total", *(f"{r.size:,}" for r in raw.splits.values()), style="bold")
    console.print(table)
    console.print(f"source: {raw.source}", highlight=False, markup=False)
    shape = "×".join(map(str, raw.image_shape))
    console.print(f"images {shape} (d = {int(np.prod(raw.image_shape)):,}), pixels / {raw.scale:g}")
    for note in raw.notes:
        console.print(f"[dim]{note}[/]")
