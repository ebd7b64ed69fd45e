"""``malleability headless``: batch runs with progress bars, writing a run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from engine.experiments.events import Event, Failed
from engine.experiments.presets import apply_quick, cap_quick
from engine.experiments.spec import RunSpec
from engine.experiments.store import RunStore, default_run_dir
from malleability_tui.cli.common import (
    console,
    die,
    err_console,
    expected_errors,
    parse_floats,
    parse_ints,
    parse_names,
)
from malleability_tui.cli.render import LONG_TABLES, ProgressRenderer, table_of


def build_spec(
    *,
    dataset: str | None,
    experiment: str | None,
    config: Path | None,
    classes: str | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    widths: str | None = None,
    seeds: str | None = None,
    epochs: int | None = None,
    lr: float | None = None,
    optimizer: str | None = None,
    device: str | None = None,
    data_dir: Path | None = None,
    quick: bool = False,
    attacks: str | None = None,
    eps: str | None = None,
    rtol: float | None = None,
    models: str | None = None,
    datasets: str | None = None,
    dtype: str | None = None,
    qkv_dk: int | None = None,
    qkv_dk_sweep: str | None = None,
    executor: dict[str, object] | None = None,
    center: bool | None = None,
) -> RunSpec:
    """Config file (if any) → --quick preset → explicit flags, validated."""
    spec = RunSpec.load(config) if config else RunSpec()
    if quick:
        spec = apply_quick(spec)
    ch: dict[str, object] = {}
    if experiment is not None:
        ch["experiment"] = experiment
    if dataset is not None:
        ch["data__name"] = dataset.lower()
    if data_dir is not None:
        ch["data__data_dir"] = str(data_dir)
    if classes is not None:
        ch["data__classes"] = (
            None if classes.lower() in ("all", "") else parse_ints(classes, "--classes")
        )
    if center is not None:
        ch["data__center"] = center
    if n_train is not None:
        ch["data__n_train"] = n_train
    if n_test is not None:
        ch["data__n_test"] = n_test
    if widths is not None:
        ch["model__widths"] = parse_ints(widths, "--widths")
    if models is not None:
        ch["model__kinds"] = parse_names(models, "--models")
    if seeds is not None:
        ch["seeds"] = parse_ints(seeds, "--seeds")
    if epochs is not None:
        ch["train__epochs"] = epochs
    if lr is not None:
        ch["train__lr"] = lr
    if optimizer is not None:
        ch["train__optimizer"] = optimizer.lower()
    if device is not None:
        ch["device"] = device
    if dtype is not None:
        ch["dtype"] = dtype
    if attacks is not None:
        ch["flip__attacks"] = parse_names(attacks, "--attacks")
    if eps is not None:
        ch["flip__eps"] = parse_floats(eps, "--eps")
    if rtol is not None:
        ch["spectrum__rtol"] = rtol
    if datasets is not None:
        ch["spectrum__datasets"] = parse_names(datasets, "--datasets")
    if qkv_dk is not None:
        ch["qkv__d_k"] = qkv_dk
    if qkv_dk_sweep is not None:
        ch["qkv__dk_sweep"] = parse_ints(qkv_dk_sweep, "--qkv-dk-sweep") if qkv_dk_sweep else ()
    ch.update(executor or {})
    spec = spec.replace(**ch)
    if quick and n_train is None and n_test is None:
        spec, note = cap_quick(spec)
        if note:
            err_console.print(f"note: --quick: {note}", highlight=False, markup=False)
    return spec


def executor_changes(
    executor: str | None,
    address: str | None,
    max_parallel: int | None,
    cpus_per_cell: int | None,
    gpus_per_cell: float | None,
) -> dict[str, object]:
    """The ``executor__*`` spec changes of the executor flags that were given."""
    given = {
        "kind": executor.lower() if executor is not None else None,
        "address": address,
        "max_parallel": max_parallel,
        "cpus_per_cell": cpus_per_cell,
        "gpus_per_cell": gpus_per_cell,
    }
    ch: dict[str, object] = {f"executor__{k}": v for k, v in given.items() if v is not None}
    if address is not None and executor is None:
        ch["executor__kind"] = "ray"  # an address only means something to Ray
    return ch


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
    from engine.experiments.executors import check_executor

    if resume:
        if out is None:
            die("--resume needs --out DIR: the run directory to continue")
        from engine.experiments.validate import read_spec

        if not (out / "spec.toml").is_file():
            die(
                f"invalid --out {str(out)!r}: a run directory to resume (it has spec.toml); start a new run without --resume"
            )
        spec = read_spec(out / "spec.toml").replace(**(executor or {}))
    check_executor(spec.executor)
    path = out or default_run_dir(spec)
    store = RunStore(path, spec, resume=resume)  # refused here if another process writes it
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
            show_results(store.tables, store.summary)
        bad = ", ".join(f"{c} ({e})" for c, e in store.failed_cells.items())
        die(
            f"partial: {len(store.failed_cells)} cells failed: {bad}; rerun them with: "
            f"malleability headless --resume --out {path}",
            1,
        )
    if not quiet:
        show_results(store.tables, store.summary)
    console.print(f"run directory: [bold]{path}[/]", highlight=False)
    return path


def show_results(tables: dict, summary: dict) -> None:
    """Print each result table (long ones abbreviated) and the headlines."""
    for name, rows in tables.items():
        if rows and name not in LONG_TABLES:
            console.print(table_of(name, rows))
    for section, data in summary.items():
        lines = data.get("headline") if isinstance(data, dict) else None
        if lines:
            console.print(f"[bold]{section}[/]")
            for ln in [lines] if isinstance(lines, str) else lines:
                console.print(f"  {ln}", highlight=False)


# The executor options, shared by headless and reproduce (README "Scale out").
ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help='Where sweep cells run: local (default, in this process) or ray (parallel; README "Scale out").',
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--address",
        help="Ray cluster to join (host:port of `ray start --head`); default: a local Ray on this machine.",
    ),
]
MaxParallelOpt = Annotated[
    int | None,
    typer.Option(
        "--max-parallel",
        help="Cells in flight at once with --executor ray (default: as many as the CPUs allow).",
    ),
]
CpusPerCellOpt = Annotated[
    int | None,
    typer.Option("--cpus-per-cell", help="CPUs and torch threads per Ray cell (default 1)."),
]
GpusPerCellOpt = Annotated[
    float | None,
    typer.Option("--gpus-per-cell", help="GPUs per Ray cell, fractions share one (default 0)."),
]


def headless(
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset",
            "-d",
            help="Data set: digits (embedded), mnist, fashion-mnist, cifar10, synthetic.",
        ),
    ] = None,
    experiment: Annotated[
        str | None,
        typer.Option(
            "--experiment",
            "-e",
            help="Experiment(s), comma-separated, or all (default). See `malleability experiments`.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="A run spec TOML file (flags override it)."),
    ] = None,
    classes: Annotated[
        str | None, typer.Option(help="Class labels to keep, e.g. 3,8 (binary, ±1 targets) or all.")
    ] = None,
    n_train: Annotated[
        int | None,
        typer.Option("--n-train", help="Training examples, class-balanced (default 1000)."),
    ] = None,
    n_test: Annotated[
        int | None, typer.Option("--n-test", help="Test examples, class-balanced (default 200).")
    ] = None,
    widths: Annotated[
        str | None, typer.Option(help="Hidden widths, e.g. 16,1024,4096 (default 4…4096).")
    ] = None,
    models: Annotated[
        str | None, typer.Option(help="Models: relu,attn (default both), qkv (QKV-Attn, v2).")
    ] = None,
    qkv_dk: Annotated[
        int | None,
        typer.Option("--qkv-dk", help="QKV-Attn projection width d_k (0: d_k = d, default)."),
    ] = None,
    qkv_dk_sweep: Annotated[
        str | None,
        typer.Option(
            "--qkv-dk-sweep", help="ntk: extra QKV-Attn d_k values at the largest width, e.g. 8,32."
        ),
    ] = None,
    seeds: Annotated[str | None, typer.Option(help="Seeds, e.g. 0,1,2 (default).")] = None,
    epochs: Annotated[int | None, typer.Option(help="Training epochs (paper: 500).")] = None,
    lr: Annotated[float | None, typer.Option(help="Learning rate (paper: 1e-3).")] = None,
    optimizer: Annotated[
        str | None, typer.Option(help="adam (paper), sgd or gd (full batch).")
    ] = None,
    attacks: Annotated[str | None, typer.Option(help="Attacks for flip: fgsm,pgd,mim.")] = None,
    eps: Annotated[
        str | None, typer.Option(help="ε values in pixel space, e.g. 0.1,0.3 (default 0.3).")
    ] = None,
    rtol: Annotated[
        float | None,
        typer.Option(help="Relative eigenvalue tolerance of the numerical rank (spectrum)."),
    ] = None,
    datasets: Annotated[
        str | None, typer.Option(help="Extra data sets for spectrum, e.g. mnist,cifar10.")
    ] = None,
    device: Annotated[
        str | None, typer.Option(help="auto (CUDA when present), cpu or cuda.")
    ] = None,
    dtype: Annotated[str | None, typer.Option(help="float32 (default) or float64.")] = None,
    center: Annotated[
        bool | None,
        typer.Option(
            "--center/--no-center",
            help="Subtract the training set's per-pixel mean before the unit-norm scaling (default: no, as the paper).",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Folder holding the data set's files.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Run directory (default runs/<time>-<experiment>-<dataset>)."
        ),
    ] = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="Small preset: n_train 300 (capped to what the data set has), widths 16,64,256,1024, 200 epochs at batch 32, one seed.",
        ),
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run in --out, skipping finished cells.")
    ] = False,
    save_config: Annotated[
        Path | None,
        typer.Option("--save-config", help="Write the resolved spec to this TOML file and exit."),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="No progress bars or tables; print only the run directory."
        ),
    ] = False,
    executor: ExecutorOpt = None,
    address: AddressOpt = None,
    max_parallel: MaxParallelOpt = None,
    cpus_per_cell: CpusPerCellOpt = None,
    gpus_per_cell: GpusPerCellOpt = None,
) -> None:
    """Run experiments without the TUI and write a run directory of CSV/JSON."""
    with expected_errors():
        ex = executor_changes(executor, address, max_parallel, cpus_per_cell, gpus_per_cell)
        spec = build_spec(
            dataset=dataset,
            experiment=experiment,
            config=config,
            classes=classes,
            n_train=n_train,
            n_test=n_test,
            widths=widths,
            seeds=seeds,
            epochs=epochs,
            lr=lr,
            optimizer=optimizer,
            device=device,
            data_dir=data_dir,
            quick=quick,
            attacks=attacks,
            eps=eps,
            rtol=rtol,
            models=models,
            datasets=datasets,
            dtype=dtype,
            qkv_dk=qkv_dk,
            qkv_dk_sweep=qkv_dk_sweep,
            executor=ex,
            center=center,
        )
        from engine.experiments.paths import check_file_target, check_folder_target

        if save_config is not None:
            check_file_target(save_config, "save-config")
            spec.save(save_config)
            console.print(f"wrote {save_config}")
            return
        from engine.device import resolve_device
        from engine.experiments.registry import select

        if out is not None:  # path checks before any work
            check_folder_target(out, "out")
        resolve_device(spec.device)
        select(spec.experiment)
        if not resume:
            check_data(spec)
        execute(spec, out, resume=resume, quiet=quiet, executor=ex)


def check_data(spec: RunSpec) -> None:
    """Fail before creating a run directory when the data set is not here."""
    from engine.data import dataset_status
    from engine.errors import DatasetError

    d = spec.data.data_dir
    if d is not None and not Path(d).is_dir():
        raise DatasetError(f"--data-dir {d} does not exist or is not a folder")
    st = dataset_status(spec.data.name, d)
    if not st.found:
        where = f" in --data-dir {d}" if d is not None else ""
        raise DatasetError(f"data set {st.name} not found{where}: {st.how_to_get}")
    # Data-dependent errors (an unknown class, n_train larger than a class holds) are
    # found here, before a run directory exists, not as an empty "failed" run.
    from engine.data import load_dataset
    from engine.experiments.registry import subset_sizes

    dd = spec.data
    for n_train, n_test in subset_sizes(spec):
        load_dataset(
            dd.name, root=d, classes=dd.classes, n_train=n_train, n_test=n_test, seed=spec.seeds[0]
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
    for it in items:
        console.print(f"[bold]{it['name']:<10}[/] {it['description']}", highlight=False)


__all__ = [
    "AddressOpt",
    "CpusPerCellOpt",
    "ExecutorOpt",
    "GpusPerCellOpt",
    "MaxParallelOpt",
    "build_spec",
    "execute",
    "executor_changes",
    "experiments_cmd",
    "headless",
]
