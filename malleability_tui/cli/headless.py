"""``malleability headless``: batch runs with progress bars, writing a run directory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from malleability_tui.cli.common import (
    console,
    die,
    err_console,
    expected_errors,
)
from malleability_tui.cli.declared import Given, with_options
from malleability_tui.cli.render import LONG_TABLES, ProgressRenderer, print_headlines, print_table
from malleability_tui.cli.sources import TrackingUriOpt, TrackOpt, track_run, tracker_of
from malleability_tui.options import (
    BY_NAME,
    BY_SPEC_KEY,
    HEADLESS_OPTIONS,
    OptionError,
    quick_help,
)

if TYPE_CHECKING:  # the engine loads when a command runs, not for --help
    from engine.run.events import Event, Failed
    from engine.run.spec import RunSpec


def build_spec(
    given: Given,
    *,
    config: Path | None = None,
    quick: bool = False,
    until_converged: bool = False,
) -> RunSpec:
    """Config file (if any) → --quick preset → the options ``given`` (option name → value
    as typed, None: not given; ``malleability_tui.options``), validated."""
    from engine.reproduce.presets import apply_quick, cap_quick, quick_departures
    from engine.run.spec import RunSpec

    spec = RunSpec.load(config) if config else RunSpec()
    if quick:
        spec = apply_quick(spec)
    from malleability_tui.options import OptionError, spec_changes

    try:
        ch: dict[str, object] = spec_changes(
            {k: v for k, v in given.items() if BY_NAME[k].section != "executor"}
        )
        ch.update(executor_changes(given))
    except OptionError as e:
        die(str(e))
    if until_converged:
        ch["train__until"] = "converged"
    from engine.errors import ConfigError
    from malleability_tui.options import flag_error, given_flags

    try:
        spec = spec.replace(**ch)
    except ConfigError as e:  # in the flag's words, not the spec key's: --widths '0'
        if (line := flag_error(e, given_flags(given))) is None:
            raise
        die(line)
    if quick and given.get("n_train") is None and given.get("n_test") is None:
        spec, note = cap_quick(spec)
        if note:
            err_console.print(f"note: --quick: {note}", highlight=False, markup=False)
    if quick and (line := quick_departures(spec)):
        for ln in line.splitlines():
            err_console.print(f"note: {ln}", highlight=False, markup=False)
    if spec.note:
        err_console.print(f"note: {spec.note}", highlight=False, markup=False, soft_wrap=True)
    return spec


def executor_changes(given: Given) -> dict[str, object]:
    """The ``executor__*`` spec changes of the executor options given (``--executor``,
    ``--address``, …); an address alone means Ray. ``OptionError`` for text that does
    not parse."""
    from malleability_tui.options import spec_changes

    ch = spec_changes({k: v for k, v in given.items() if BY_NAME[k].section == "executor"})
    if "executor__address" in ch and "executor__kind" not in ch:
        ch["executor__kind"] = "ray"  # an address only means something to Ray
    return ch


def check_ray_flags(kind: str, ex: dict[str, object]) -> None:
    """Refuse Ray-only flags (--address, --gpus-per-cell, …) on a run whose executor is
    local: they would be ignored without a word."""
    if kind != "local":
        return
    given = [BY_SPEC_KEY[k].flag for k in ex if k != "executor__kind"]
    if given:
        die(f"{given[0]} goes with --executor ray (this run's executor is local)")


def execute(
    spec: RunSpec,
    out: Path | None,
    *,
    resume: bool,
    quiet: bool = False,
    executor: dict[str, object] | None = None,
) -> Path:
    """Run ``spec`` into a run directory with progress bars; returns the directory.

    Ctrl-C closes the directory cleanly (status ``interrupted``) and exits 130.
    ``executor`` (``executor__*`` changes) also applies to a resumed run's saved spec:
    where cells run never changes their numbers.
    """
    from engine.experiments import execute as run_loop
    from engine.run.events import Failed
    from engine.run.executors import check_executor
    from engine.run.store import RunStore, default_run_dir

    if resume:
        if out is None:
            die("--resume needs --out DIR: the run directory to continue")
        from engine.run.validate import read_spec

        if not (out / "spec.toml").is_file():
            die(
                f"invalid --out {str(out)!r}: a run directory to resume (it has spec.toml); start a new run without --resume"
            )
        spec = read_spec(out / "spec.toml").replace(**(executor or {}))
        check_ray_flags(spec.executor.kind, executor or {})
    check_executor(spec.executor)
    path = out or default_run_dir(spec)
    store = RunStore(path, spec, resume=resume)  # refused here if another process writes it
    path = store.path  # normalised (no a/../ left)
    if resume:
        err_console.print(
            f"resuming {out} with its saved spec.toml (other flags than the executor's are ignored)",
            soft_wrap=True,
        )
    for note in store.notes:
        err_console.print(f"note: {note}", highlight=False)
    failed: list[Failed] = []
    try:
        with ProgressRenderer(console, quiet=quiet) as pr:

            def show(ev: Event) -> None:
                pr.show(ev)
                if isinstance(ev, Failed):
                    failed.append(ev)

            run_loop(spec, path, store=store, on_event=show)  # closes the store, whatever happens
    except KeyboardInterrupt:
        err_console.print(
            f"interrupted: {len(store.done_cells)} finished cells kept in {path}; "
            f"continue with: malleability headless --resume --out {path}"
        )
        raise typer.Exit(130) from None
    if failed:
        if failed[0].error == "Cancelled":
            die(
                f"{failed[0].message} in {path}; continue with: malleability headless --resume --out {path}",
                130,
            )
        die(f"{failed[0].message} (partial results kept in {path})", 1)
    if store.failed_cells:
        if not quiet:
            show_results(store.tables, store.summary, pr.warned)
        bad = ", ".join(f"{c} ({e})" for c, e in store.failed_cells.items())
        die(
            f"partial: {len(store.failed_cells)} cells failed: {bad}; rerun them with: "
            f"malleability headless --resume --out {path}",
            1,
        )
    if not quiet:
        show_results(store.tables, store.summary, pr.warned)
    console.print(f"run directory: [bold]{path}[/]", highlight=False)
    return path


def show_results(tables: dict, summary: dict, warned: set[str] | None = None) -> None:
    """Print each result table (long ones left to their CSVs) and the headlines, but
    those already printed as a warning."""
    for name, rows in tables.items():
        if rows and name not in LONG_TABLES:
            print_table(console, name, rows)
    print_headlines(console, summary, warned)


@with_options(*HEADLESS_OPTIONS)
def headless(
    given: Given,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="A run spec TOML file (flags override it)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Run directory (default: a new folder in runs/, named by the start time, experiment and data set).",
        ),
    ] = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help=quick_help("0 (one seed)"),
        ),
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run in --out, skipping finished cells.")
    ] = False,
    until_converged: Annotated[
        bool,
        typer.Option(
            "--until-converged",
            help="Train each cell past --epochs until the convergence guard holds on the last 10 % and 20 % of its epochs, up to train.max_epochs (default 2000); a cell stuck at its initial loss stops at the first check, not converged.",
        ),
    ] = False,
    save_config: Annotated[
        Path | None,
        typer.Option("--save-config", help="Write the resolved spec to this TOML file and exit."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the time estimate per experiment, then stop.")
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="No progress bars or tables; print only the run directory."
        ),
    ] = False,
    track: TrackOpt = None,
    tracking_uri: TrackingUriOpt = None,
) -> None:
    """Run experiments without the TUI and write a run directory of CSV/JSON."""
    with expected_errors():
        try:
            ex = executor_changes(given)
        except OptionError as e:
            die(str(e))
        spec = build_spec(given, config=config, quick=quick, until_converged=until_converged)
        if not resume:  # a resumed run's executor is its saved one (checked in execute)
            check_ray_flags(spec.executor.kind, ex)
        tracker = tracker_of(track, tracking_uri)
        from engine.run.paths import check_file_target, check_folder_target

        if save_config is not None:
            check_file_target(save_config, "save-config")
            spec.save(save_config)
            console.print(f"wrote {save_config}")
            return
        from engine.device import resolve_device
        from engine.experiments.registry import select

        if out is not None:  # path checks before any work
            check_folder_target(out, "out", run_writer=True)
        resolve_device(spec.device)
        from engine.errors import ConfigError
        from malleability_tui.options import flag_error, given_flags

        try:
            select(spec.experiment)
        except ConfigError as e:  # --experiment 'nope', not experiment='nope'
            die(flag_error(e, given_flags({"experiment": given["experiment"]})) or str(e))
        if not resume:
            check_data(spec)
        if dry_run:
            show_estimate(spec)
            return
        path = execute(spec, out, resume=resume, quiet=quiet, executor=ex)
        track_run(tracker, path)


def show_estimate(spec: RunSpec) -> None:
    """The run's time estimate on this machine (``engine.experiments.estimate``), one line
    per experiment and the total, as ``reproduce --dry-run`` prices it."""
    from engine.experiments.estimate import breakdown, until_estimate
    from malleability_tui.text import duration

    lines = breakdown([("", spec)])
    for ln in lines:
        text = f"{ln.experiment}: ≈ {duration(ln.estimate_s)}"
        if ln.flops or ln.steps:
            text += f" (FLOP floor {duration(ln.floor_s)}, {ln.steps:.0f} steps"
            text += f", {ln.fused_steps:.0f} fused)" if ln.fused_steps else ")"
        console.print(text, highlight=False, markup=False)

    def priced(specs: Sequence[RunSpec]) -> float:
        return sum(ln.estimate_s for ln in breakdown([("", s) for s in specs]))

    total, low, cap = until_estimate([spec], priced)  # the lines above: at the caps
    span = f" (first checks {duration(low)}, caps {duration(cap)})" if low < 0.99 * cap else ""
    console.print(f"estimated run time ≈ {duration(total)} on this machine{span}", highlight=False)


def check_data(spec: RunSpec) -> None:
    """Fail before creating a run directory when the data set is not here."""
    from engine.data import dataset_status
    from engine.errors import DatasetError

    d = spec.data.data_dir
    if d is not None and not Path(d).is_dir():
        raise DatasetError(f"--data-dir {d} does not exist or is not a folder")
    st = dataset_status(spec.data.name, d, spec.data.source_options())
    if not st.found:
        where = f" in --data-dir {d}" if d is not None else ""
        raise DatasetError(f"data set {st.name} not found{where}: {st.how_to_get}")
    from engine.data import canonical_name, is_source

    for extra in (n for n in spec.spectrum.datasets if not is_source(n)):
        canonical_name(extra)  # an unknown name: one line now, not after the run dir exists
    for extra in (n for n in spec.spectrum.datasets if is_source(n)):  # --datasets sources
        ex = dataset_status(extra, None, spec.data.source_options())
        if not ex.found or ex.problem:
            raise DatasetError(ex.problem or f"--datasets {extra}: not found ({ex.how_to_get})")
    # Data-dependent errors (an unknown class, n_train larger than a class holds) are
    # found here, before a run directory exists, not as an empty "failed" run.
    from engine.data import load_dataset
    from engine.experiments.registry import subset_sizes

    dd = spec.data
    for n_train, n_test in subset_sizes(spec):
        load_dataset(
            dd.name,
            root=d,
            classes=dd.classes,
            n_train=n_train,
            n_test=n_test,
            seed=spec.seeds[0],
            source=dd.source_options(),
        )


def experiments_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the registered experiments."""
    from engine.experiments.registry import describe

    items = describe()
    if as_json:
        console.print_json(json.dumps(items))
        return
    from rich.table import Table

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()  # wraps at word boundaries under its own column
    for it in items:
        grid.add_row(it["name"], it["description"])
    console.print(grid, highlight=False)


__all__ = [
    "build_spec",
    "check_ray_flags",
    "execute",
    "executor_changes",
    "experiments_cmd",
    "headless",
]
