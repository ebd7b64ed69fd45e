"""``malleability reproduce``: the paper's protocol in one command, with the paper's
numbers beside ours and the claims checklist (engine/reproduce/compare.py)."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from malleability_tui.cli.common import (
    console,
    die,
    err_console,
    expected_errors,
    parse_ints,
    parse_names,
)
from malleability_tui.cli.declared import Given, with_options
from malleability_tui.cli.headless import check_ray_flags, execute, executor_changes
from malleability_tui.cli.render import WIDTH, table_parts
from malleability_tui.cli.sources import TrackingUriOpt, TrackOpt, track_run, tracker_of
from malleability_tui.options import (
    BY_NAME,
    OptionError,
    flag_error,
    given_flags,
    quick_help,
    spec_changes,
)
from malleability_tui.text import MISSING, duration, number

if TYPE_CHECKING:  # the engine loads when the command runs, not for --help
    from engine.experiments.estimate import PlanLine
    from engine.reproduce.plan import Part

EXECUTOR = ("executor", "address", "max_parallel", "cpus_per_cell", "gpus_per_cell")
PLAN_ARGS = ("seeds", "data_dir", "device")
"""Options ``plan`` takes itself; the others are overrides of every part's spec."""
REPRODUCE_OPTIONS = (
    BY_NAME["seeds"].told(help="Seeds (default 0,1,2, --quick too: claims 3, 4 and 6 need them)."),
    BY_NAME["data_dir"].told(help="Folder holding the data set's files (or their parent)."),
    BY_NAME["device"].told(default="auto"),
    BY_NAME["widths"].told(help="Override the preset's widths, e.g. 16,256,1024."),
    BY_NAME["epochs"].told(help="Override the preset's training epochs."),
    BY_NAME["max_epochs"],
    BY_NAME["models"].told(
        help="Models (default relu,attn); add qkv for the v2 claim (checklist 7)."
    ),
    BY_NAME["adv_recipe"],
    BY_NAME["engine"],
    *(BY_NAME[n] for n in EXECUTOR),
)
"""The run options ``reproduce`` takes (``malleability_tui.options``), as it presents them."""

VERDICT_STYLE = {
    "holds": "green",
    "does not hold": "red",
    "inconclusive": "yellow",
    "no data": "dim",
}


@with_options(*REPRODUCE_OPTIONS)
def reproduce(
    dataset: Annotated[
        list[str] | None,
        typer.Option(
            "--dataset",
            "-d",
            help="Data set(s): mnist, cifar10, fashion-mnist, digits (repeat the option for several).",
        ),
    ] = None,
    tables: Annotated[
        str,
        typer.Option(
            help="Paper tables to reproduce: 1 (NTK distance), 2 (10-class flips), 3 (binary flips), 4 (adversarial training)."
        ),
    ] = "1,2,3,4",
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help=quick_help("0,1,2 (claims 3, 4 and 6 need them)"),
        ),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Run directory (default runs/<time>-reproduce)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run in --out, skipping finished cells.")
    ] = False,
    *,
    given: Given,
    until_converged: Annotated[
        bool,
        typer.Option(
            "--until-converged",
            help="Train each cell past --epochs until the convergence guard holds on the last 10 % and 20 % of its epochs, up to --max-epochs (default 2000); a cell stuck at its initial loss stops at the first check, not converged.",
        ),
    ] = False,
    protocols: Annotated[
        str | None,
        typer.Option(
            help="Preprocessing: paper (the paper's), centred (per-pixel centring, not in the paper), alpha-<α> (a fraction 0 < α < 1 of the centring) or several, e.g. paper,centred (each claim under each, side by side). Default: the preset's (--quick: centred).",
        ),
    ] = None,
    center: Annotated[
        bool, typer.Option("--center", help="Centre the inputs: the same as --protocols centred.")
    ] = False,
    center_fraction: Annotated[
        float | None,
        typer.Option(
            "--center-fraction",
            help="Centring as a knob: subtract this fraction (0 to 1) of the per-pixel mean (0: --protocols paper, 1: centred, else alpha-<α>).",
        ),
    ] = None,
    scale: Annotated[
        str | None,
        typer.Option(
            "--scale",
            help="A declared scale: data (n_train 800 MNIST/Fashion, 200 CIFAR-10; widths 16-4096; seeds 0,1,2; until converged; both protocols; <= 60 min per data set and protocol by the estimate on 2 idle cores).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and the time estimate, then stop.")
    ] = False,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Then retrain one seed's converged cells of each part to twice their epochs and record per claim whether the verdict or its numbers move (with --resume --out RUN: on a finished run).",
        ),
    ] = False,
    track: TrackOpt = None,
    tracking_uri: TrackingUriOpt = None,
) -> None:
    """Reproduce the paper's Tables 1–4, κ values and claims in one run directory."""
    from engine.experiments.estimate import (
        PER_RUN_SECONDS,
        STOP_SHARE,
        breakdown,
        estimate_seconds,
        fused_probe,
        fused_step_price,
        probe_flops,
        probe_shape_flops,
        probe_step_seconds,
        probe_stream_seconds,
        probe_update_seconds,
        until_estimate,
    )
    from engine.experiments.work import OVERHEAD, TRAIN_OVERHEAD
    from engine.reproduce.driver import reproduce_parts
    from engine.reproduce.plan import plan
    from engine.reproduce.presets import known_failure, quick_departures, scale_departures
    from engine.run.paths import check_outside_runs, runs_root

    with expected_errors():
        tracker = tracker_of(track, tracking_uri)
        names = tuple(parse_names(",".join(dataset or ["mnist"]), "--dataset") or ("mnist",))
        tabs = parse_ints(tables, "--tables") or ()
        if any(t not in (1, 2, 3, 4) for t in tabs):
            die(f"invalid --tables {tables!r}: a subset of 1,2,3,4")
        from engine.data import canonical_name

        names = tuple(canonical_name(n) for n in names)
        try:
            args = spec_changes({k: given[k] for k in PLAN_ARGS})
            over: dict[str, Any] = spec_changes(
                {k: v for k, v in given.items() if k not in PLAN_ARGS and k not in EXECUTOR}
            )
            ex = executor_changes(given)
        except OptionError as e:
            die(str(e))
        if until_converged:
            over["train__until"] = "converged"
        protos = parse_names(protocols, "--protocols") if protocols is not None else None
        if center:
            if protos and tuple(protos) != ("centred",):
                die(f"invalid --center with --protocols {protocols!r}: use one of them")
            protos = ("centred",)
        if center_fraction is not None:
            if protos:
                die(
                    "invalid --center-fraction with --center or --protocols: use one of them "
                    "(--protocols alpha-<α> names a fraction among others)"
                )
            if not 0 <= center_fraction <= 1:
                die(f"invalid --center-fraction {center_fraction!r}: a number from 0 to 1")
            a = center_fraction
            protos = ("paper",) if a == 0 else ("centred",) if a == 1 else (f"alpha-{a:g}",)
        over.update(ex)  # every sub-run gets the same executor
        from engine.errors import ConfigError

        try:
            parts = plan(
                names,
                tables=tabs,
                seeds=args.get("seeds"),
                quick=quick,
                data_dir=args.get("data__data_dir"),
                device=args["device"],
                overrides=over,
                protocols=tuple(protos) if protos else None,
                scale=scale,
            )
        except ConfigError as e:  # in the flag's words, not the spec key's: --widths '0'
            flags = given_flags(given)
            for field, flag, raw in (
                ("scale", "--scale", scale),
                ("protocols", "--protocols", protocols),
            ):
                if raw is not None:
                    flags[field] = (flag, raw)
            line = flag_error(e, flags)
            if line is None:
                raise
            die(line)
        from engine.run.executors import check_executor

        for part in parts[:1]:  # before any folder exists: Ray missing is one line
            check_ray_flags(part.spec.executor.kind, ex)
            check_executor(part.spec.executor)
        path = out or runs_root() / f"{time.strftime('%Y%m%d-%H%M%S')}-reproduce"
        # Not into another run (or reproduction); --resume continues this one's own folder.
        mine = resume and (path / "reproduce.json").is_file()
        check_outside_runs(path, "out", own=path if mine else None)
        if path.exists() and any(path.iterdir()) and not resume and not dry_run:
            die(
                f"invalid --out {str(path)!r}: a new or empty folder (or pass --resume to continue it)"
            )
        rate, step, stream = probe_flops(), probe_step_seconds(), probe_stream_seconds()
        priced = functools.partial(
            estimate_seconds,
            flops_per_s=rate,
            step_s=step,
            fused_s=fused_probe,
            stream_s=stream,
            update_s=probe_update_seconds,
            shape_rate=probe_shape_flops,
        )
        est, low, cap = until_estimate([p.spec for p in parts], priced)
        plan_text = ", ".join(f"{p.key} ({p.spec.experiment})" for p in parts)
        err_console.print(f"plan: {plan_text}", highlight=False, markup=False)
        for p in parts:
            if p.note:
                err_console.print(f"note: {p.key}: {p.note}", highlight=False, markup=False)
        if quick and parts and (line := quick_departures(parts[-1].spec)):
            err_console.print(f"note: {line.splitlines()[0]}", highlight=False, markup=False)
        if scale and parts:
            for ln in scale_departures(scale, parts[-1].spec).splitlines():
                err_console.print(f"note: {ln}", highlight=False, markup=False)
        for p in parts:  # the cells measurement saw fail a guard, before they run
            if known := known_failure(p.spec):
                err_console.print(f"note: {p.key}:", highlight=False, markup=False)
                for ln in known.splitlines():
                    err_console.print(f"  {ln}", highlight=False, markup=False)
        if len({p.protocol for p in parts}) > 1:
            err_console.print(
                f"note: protocols {', '.join(dict.fromkeys(p.protocol for p in parts))} "
                "(centring is not in the paper): the checklist shows each claim under each",
                highlight=False,
                markup=False,
            )
        lines = breakdown(
            [(p.key, p.spec) for p in parts],
            flops_per_s=rate,
            step_s=step,
            fused_s=fused_probe,
            stream_s=stream,
            update_s=probe_update_seconds,
            shape_rate=probe_shape_flops,
        )
        floor = sum(ln.floor_s for ln in lines)
        fused = sum(ln.fused_steps for ln in lines)
        auto = sum(ln.steps for ln in lines) - fused
        fused_ms = 1e3 * fused_step_price([p.spec for p in parts])
        updated = sum(ln.updated for ln in lines)
        update_ns = 1e9 * probe_update_seconds(parts[0].spec.train.optimizer) if parts else 0.0
        err_console.print(
            f"estimated run time ≈ {duration(est)} on this machine; FLOP floor {duration(floor)} "
            f"({number(sum(ln.flops for ln in lines))} FLOPs at {number(rate)} FLOP/s, the matmul probe); "
            f"estimate = {OVERHEAD:g}× the floor (training's at {TRAIN_OVERHEAD:g}× its "
            f"steps' own matmul rate) + {number(auto)} autograd steps × "
            f"{1e3 * step:.2f} ms + {number(fused)} fused steps × {fused_ms:.2f} ms (the "
            f"training loops' probes) + {number(updated)} parameter updates × "
            f"{update_ns:.2f} ns (the optimiser's probe) + {PER_RUN_SECONDS:g} s a run",
            highlight=False,
            markup=False,
        )
        if low < 0.99 * cap:  # until converged: between the first check and the cap
            err_console.print(
                f"until converged: each cell expected {STOP_SHARE:g} of the way from its "
                f"first check to its epoch cap; {duration(low)} if every cell stops at its "
                f"first check, {duration(cap)} at its cap (the breakdown below)",
                highlight=False,
                markup=False,
            )
        if dry_run:
            show_breakdown(lines, cap, {p.key: p.dataset for p in parts})
            return

        def run_part(part: Part, sub: Path, again: bool) -> None:
            console.rule(f"{part.key}: {part.spec.experiment}")
            execute(part.spec, sub, resume=again, quiet=False, executor=ex)

        def on_missing(part: Part, reason: str) -> None:
            err_console.print(f"[yellow]{part.key}: no data[/] ({reason})", highlight=False)

        meta, comparison = reproduce_parts(
            path,
            parts,
            run_part=run_part,
            on_missing=on_missing,
            resume=resume,
            datasets=list(names),
            tables=list(tabs),
            quick=quick,
            estimated_seconds=est,
            verify=verify,
        )
        seconds = meta["seconds"]
        show_comparison(comparison)
        if v := meta.get("verify"):
            moved = ", ".join(v["moved_claims"]) or "none"
            console.print(
                f"continuation check (×{v['epochs_x']} epochs): {v['checked']} verdicts, "
                f"moved: {moved}",
                highlight=False,
            )
        console.print(
            f"reproduction: [bold]{path}[/] ({duration(seconds)}); report: malleability report {path}",
            highlight=False,
        )
        track_run(tracker, path)


def breakdown_table(
    lines: list[PlanLine], total: float, datasets: dict[str, str] | None = None
) -> Table:
    """The dry run's time budget as a table: one row per (run, experiment), its share of
    the estimate. ``datasets`` (run → data set): each data set gets a row of its own and
    its runs lose the repeated ``<data set>-`` prefix, so the longest run name
    (fashion-mnist-multiclass-centred) fits 80 columns whole; the fixed line's long label
    goes to the caption."""
    datasets = datasets or {}
    t = Table(title="time budget (--dry-run)", title_justify="left", box=None, pad_edge=False)
    for col in ("run", "experiment", "FLOPs", "floor", "steps", "est.", "share"):
        left = col in ("run", "experiment")
        t.add_column(col, justify="left" if left else "right", no_wrap=True)
    shown: str | None = None
    caption = ""
    for ln in lines:
        share = f"{100 * ln.estimate_s / total:.1f}%" if total > 0 else MISSING
        flops = number(ln.flops) if ln.flops else MISSING
        floor = duration(ln.floor_s) if ln.flops else MISSING
        steps = number(ln.steps) if ln.steps else MISSING
        run, exp = ln.run, ln.experiment
        if ds := datasets.get(run):
            if ds != shown:
                t.add_row(f"[bold]{escape(ds)}[/]")
                shown = ds
            run = "  " + run.removeprefix(f"{ds}-")
        elif exp.startswith("(") and ":" in exp:  # "(fixed: data, …)": the caption says what
            head, _, rest = exp.strip("()").partition(":")
            caption = f"{head}: {rest.strip()}, {duration(ln.estimate_s)} in all"
            exp = head
        t.add_row(escape(run), escape(exp), flops, floor, steps, duration(ln.estimate_s), share)
    if caption:
        t.caption, t.caption_justify = caption, "left"
    return t


def show_breakdown(
    lines: list[PlanLine], total: float, datasets: dict[str, str] | None = None
) -> None:
    """Print ``breakdown_table``."""
    err_console.print(breakdown_table(lines, total, datasets))


def _styled(verdict: str) -> str:
    """A verdict in its colour; "inconclusive: models not converged" takes inconclusive's."""
    style = VERDICT_STYLE.get(verdict.split(":", 1)[0])
    return f"[{style}]{verdict}[/]" if style else verdict


COMPARISON_KEYS = ("dataset", "model", "m", "attack", "task", "ridge", "ranking")
"""The comparison tables' columns that say which row it is (repeated when a table splits)."""


def comparison_tables(
    cmp: dict[str, Any], width: int = WIDTH, encoding: str = "utf-8"
) -> list[Table]:
    """Rich tables of ``comparison_rows`` (the checklist aside: it prints as lines), each
    within ``width`` columns as a stream of ``encoding`` prints them: a column with one
    value goes to the caption, the columns that do not fit to a second part."""
    from malleability_tui.views.claims import CHECKLIST_TITLE, comparison_rows

    tables = []
    for title, rows in comparison_rows(cmp):
        if title == CHECKLIST_TITLE or not rows:
            continue
        parts = table_parts(
            title, rows, keys=COMPARISON_KEYS, width=width, max_rows=len(rows), encoding=encoding
        )
        tables.extend(parts)
    return tables


def show_comparison(cmp: dict[str, Any]) -> None:
    """The tables, then the checklist: one line per claim and data set, then its details."""
    from malleability_tui.views.claims import (
        CHECKLIST_TITLE,
        checklist_details,
        checklist_lines,
        checklist_verdicts,
    )

    width = min(WIDTH, console.width)
    for t in comparison_tables(cmp, width, console.encoding):
        console.print(t)
    console.print(f"[bold]{CHECKLIST_TITLE}[/]", highlight=False)
    for line, verdict in zip(checklist_lines(cmp), checklist_verdicts(cmp)):
        style = VERDICT_STYLE.get(verdict.split(":", 1)[0], "")
        console.print(line, style=style, highlight=False, markup=False, no_wrap=True)
    if any(":" in str(c["verdict"]) for c in cmp.get("checklist", [])):
        console.print("* a qualified verdict: the details say why", highlight=False)
    details = checklist_details(cmp)
    if details:
        console.print("[bold]details[/]", highlight=False)
        for d in details:
            console.print(d, highlight=False, markup=False, width=width)


__all__ = ["comparison_tables", "reproduce", "show_comparison"]
