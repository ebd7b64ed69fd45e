"""``malleability reproduce``: the paper's protocol in one command, with the paper's
numbers beside ours and the claims checklist (engine/reproduce/compare.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from engine.errors import DatasetError
from engine.experiments.estimate import (
    OVERHEAD,
    PER_RUN_SECONDS,
    PlanLine,
    breakdown,
    estimate_seconds,
    hms,
    probe_flops,
    probe_step_seconds,
)
from engine.reproduce.claims import NO_DATA
from engine.reproduce.compare import compare
from engine.reproduce.plan import Part, plan
from engine.reproduce.presets import quick_departures
from engine.results import flip_text, num
from engine.run.events import to_jsonable
from engine.run.paths import atomic_write, runs_root
from engine.run.runs import read_run
from malleability_tui.cli.common import (
    console,
    die,
    err_console,
    expected_errors,
    parse_ints,
    parse_names,
)
from malleability_tui.cli.headless import (
    AddressOpt,
    CpusPerCellOpt,
    ExecutorOpt,
    GpusPerCellOpt,
    MaxParallelOpt,
    execute,
    executor_changes,
)
from malleability_tui.cli.render import fmt

VERDICT_STYLE = {
    "holds": "green",
    "does not hold": "red",
    "inconclusive": "yellow",
    "no data": "dim",
}


def _available(part: Part) -> str | None:
    """None when the part's data set loads here, else the reason (one line)."""
    from engine.data import load_dataset

    d = part.spec.data
    try:
        load_dataset(
            d.name,
            root=d.data_dir,
            classes=d.classes,
            n_train=d.n_train,
            n_test=d.n_test,
            seed=part.spec.seeds[0],
        )
    except DatasetError as e:
        return str(e)
    return None


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
    seeds: Annotated[str | None, typer.Option(help="Seeds (default 0,1,2; --quick: 0).")] = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="Small preset: widths 16,64,256,1024, n_train 300, batch 32, 200 epochs then until converged (cap 1000), centred inputs (not the paper's: it says so), one seed.",
        ),
    ] = False,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Folder holding the data set's files (or their parent)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Run directory (default runs/<time>-reproduce)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run in --out, skipping finished cells.")
    ] = False,
    device: Annotated[str, typer.Option(help="auto (CUDA when present), cpu or cuda.")] = "auto",
    widths: Annotated[
        str | None, typer.Option(help="Override the preset's widths, e.g. 16,256,1024.")
    ] = None,
    epochs: Annotated[
        int | None, typer.Option(help="Override the preset's training epochs.")
    ] = None,
    max_epochs: Annotated[
        int | None,
        typer.Option(
            "--max-epochs",
            help="Override the cap on epochs of training until converged (--quick: 1000).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and the time estimate, then stop.")
    ] = False,
    models: Annotated[
        str | None,
        typer.Option(help="Models (default relu,attn); add qkv for the v2 claim (checklist 7)."),
    ] = None,
    adv_recipe: Annotated[
        str | None,
        typer.Option(
            "--adv-recipe",
            help="Table 4's adversarial training: pgd (default; the paper's same attack) or fgsm_rs (Wong et al. 2020, about 1/3 of the MNIST preset's FLOPs).",
        ),
    ] = None,
    executor: ExecutorOpt = None,
    address: AddressOpt = None,
    max_parallel: MaxParallelOpt = None,
    cpus_per_cell: CpusPerCellOpt = None,
    gpus_per_cell: GpusPerCellOpt = None,
) -> None:
    """Reproduce the paper's Tables 1–4, κ values and claims in one run directory."""
    with expected_errors():
        names = tuple(parse_names(",".join(dataset or ["mnist"]), "--dataset") or ("mnist",))
        tabs = parse_ints(tables, "--tables") or ()
        if any(t not in (1, 2, 3, 4) for t in tabs):
            die(f"invalid --tables {tables!r}: a subset of 1,2,3,4")
        from engine.data import canonical_name

        names = tuple(canonical_name(n) for n in names)
        sd = None if seeds is None else parse_ints(seeds, "--seeds")
        over: dict[str, Any] = {}
        if widths is not None:
            over["model__widths"] = parse_ints(widths, "--widths")
        if epochs is not None:
            over["train__epochs"] = epochs
        if max_epochs is not None:
            over["train__max_epochs"] = max_epochs
        if models is not None:
            over["model__kinds"] = parse_names(models)
        if adv_recipe is not None:
            over["flip__adv_recipe"] = adv_recipe
        ex = executor_changes(executor, address, max_parallel, cpus_per_cell, gpus_per_cell)
        over.update(ex)  # every sub-run gets the same executor
        parts = plan(
            names,
            tables=tabs,
            seeds=sd,
            quick=quick,
            data_dir=str(data_dir) if data_dir else None,
            device=device,
            overrides=over,
        )
        from engine.run.executors import check_executor

        for part in parts[:1]:  # before any folder exists: Ray missing is one line
            check_executor(part.spec.executor)
        path = out or runs_root() / f"{time.strftime('%Y%m%d-%H%M%S')}-reproduce"
        if path.exists() and any(path.iterdir()) and not resume and not dry_run:
            die(
                f"invalid --out {str(path)!r}: a new or empty folder (or pass --resume to continue it)"
            )
        rate, step = probe_flops(), probe_step_seconds()
        est = estimate_seconds([p.spec for p in parts], flops_per_s=rate, step_s=step)
        plan_text = ", ".join(f"{p.key} ({p.spec.experiment})" for p in parts)
        err_console.print(f"plan: {plan_text}", highlight=False, markup=False)
        for p in parts:
            if p.note:
                err_console.print(f"note: {p.key}: {p.note}", highlight=False, markup=False)
        if quick and parts and (line := quick_departures(parts[0].spec)):
            err_console.print(f"note: {line}", highlight=False, markup=False, soft_wrap=True)
        lines = breakdown([(p.key, p.spec) for p in parts], flops_per_s=rate, step_s=step)
        floor = sum(ln.floor_s for ln in lines)
        err_console.print(
            f"estimated run time ≈ {hms(est)} on this machine; FLOP floor {hms(floor)} "
            f"({sum(ln.flops for ln in lines):.3g} FLOPs at {rate:.3g} FLOP/s, the matmul probe); "
            f"estimate = {OVERHEAD:g}× the floor + {sum(ln.steps for ln in lines):.3g} steps × "
            f"{1e3 * step:.2f} ms (the training loop's probe) + {PER_RUN_SECONDS:g} s a run",
            highlight=False,
            markup=False,
        )
        if dry_run:
            show_breakdown(lines, est)
            return
        path.mkdir(parents=True, exist_ok=True)
        meta = {
            "datasets": list(names),
            "tables": list(tabs),
            "quick": quick,
            "parts": [
                {
                    "key": p.key,
                    "dataset": p.dataset,
                    "task": p.task,
                    "role": p.role,
                    "spec": p.spec.to_dict(),
                }
                for p in parts
            ],
            "estimated_seconds": est,
            "start_time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        atomic_write(path / "reproduce.json", json.dumps(meta, indent=2) + "\n")
        runs: dict[str, dict[str, Any]] = {}
        t0 = time.perf_counter()
        for part in parts:
            sub = path / part.key
            reason = _available(part)
            if reason:
                err_console.print(f"[yellow]{part.key}: no data[/] ({reason})", highlight=False)
                runs[part.key] = {"missing": reason}
                continue
            console.rule(f"{part.key}: {part.spec.experiment}")
            execute(
                part.spec,
                sub,
                resume=resume and (sub / "events.jsonl").exists(),
                quiet=False,
                executor=ex,
            )
            runs[part.key] = read_run(sub)
        comparison = compare(runs, parts)
        seconds = time.perf_counter() - t0
        meta.update(end_time=time.strftime("%Y-%m-%dT%H:%M:%S%z"), seconds=seconds)
        atomic_write(path / "reproduce.json", json.dumps(meta, indent=2) + "\n")
        summary = {
            "status": "finished",
            "experiment": "reproduce",
            "dataset": ",".join(names),
            "seconds": seconds,
            **comparison,
        }
        atomic_write(path / "summary.json", json.dumps(to_jsonable(summary), indent=2) + "\n")
        show_comparison(comparison)
        console.print(
            f"reproduction: [bold]{path}[/] ({hms(seconds)}); report: malleability report {path}",
            highlight=False,
        )


def show_breakdown(lines: list[PlanLine], total: float) -> None:
    """The dry run's time budget: one line per (run, experiment), its share of the estimate."""
    t = Table(title="time budget (--dry-run)", box=None, pad_edge=False)
    for col in ("run", "experiment", "FLOPs", "FLOP floor", "steps", "estimate", "share"):
        t.add_column(col, justify="left" if col in ("run", "experiment") else "right")
    for ln in lines:
        share = f"{100 * ln.estimate_s / total:.1f}%" if total > 0 else "–"
        flops = f"{ln.flops:.3g}" if ln.flops else "–"
        floor = hms(ln.floor_s) if ln.flops else "–"
        steps = f"{ln.steps:.3g}" if ln.steps else "–"
        t.add_row(ln.run, ln.experiment, flops, floor, steps, hms(ln.estimate_s), share)
    err_console.print(t)


def _pm(c: dict[str, Any], key: str = "mean", unit: str = "") -> str:
    if c.get("status") == NO_DATA:
        return "no data"
    m, s = c.get(key), c.get("std")
    if m is None:
        return "no data"
    return f"{fmt(m)}{unit} ± {fmt(s)}{unit}" if s else f"{fmt(m)}{unit}"


def _ours_flip(c: dict[str, Any]) -> str:
    """Percent: mean ± std [pooled 95% Wilson interval], as the TUI's flips panel prints it."""
    if c.get("status") == NO_DATA or c.get("mean") is None:
        return "no data"
    return flip_text(
        num(c["mean"]), num(c.get("std")), num(c.get("ci_low")), num(c.get("ci_high")), scale=1
    )


def comparison_rows(cmp: dict[str, Any]) -> list[tuple[str, list[dict[str, str]]]]:
    """(title, rows of strings) for Tables 1–4, κ and the checklist: paper beside ours."""
    out: list[tuple[str, list[dict[str, str]]]] = []
    out.append(
        (
            "Table 1: NTK distance ‖f_m − f_NTK‖ (mean ± std over seeds)",
            [
                {
                    "dataset": c["dataset"],
                    "model": c["model"],
                    "m": str(c["width"]),
                    "paper": fmt(c.get("paper")) or "-",
                    "ours": _pm(c),
                }
                for c in cmp.get("table1", [])
            ],
        )
    )
    for n, title in ((2, "Table 2: flip rate %, 10-class"), (3, "Table 3: flip rate %, binary")):
        out.append(
            (
                f"{title} (ours: mean ± std [95% CI]; ratio = MLP-Attn / 2L-ReLU)",
                [
                    {
                        "dataset": c["dataset"],
                        "model": c["model"],
                        "attack": c["attack"],
                        "paper": fmt(c.get("paper")) or "-",
                        "ours": _ours_flip(c),
                        "ratio": fmt(c.get("ratio")),
                        "paper ratio": fmt(c.get("paper_ratio")) or "-",
                    }
                    for c in cmp.get(f"table{n}", [])
                ],
            )
        )
    out.append(
        (
            "Claim 3 sensitivity: MLP-Attn / 2L-ReLU flip-rate ratio (pooled %, MLP-Attn vs 2L-ReLU) per protocol",
            grid_rows(cmp.get("flip_grid", [])),
        )
    )
    rows4 = []
    for c in cmp.get("table4", []):
        paper = (
            f"{fmt(c.get('paper_standard'))} → {fmt(c.get('paper_adversarial'))}"
            if c.get("paper_standard")
            else "-"
        )
        ours = (
            "no data"
            if c.get("status") == NO_DATA
            else f"{_ours_flip(c['standard'])} → {_ours_flip(c['adversarial'])}"
        )
        rows4.append({"dataset": c["dataset"], "model": c["model"], "paper": paper, "ours": ours})
    out.append(("Table 4: PGD flip rate %, standard → adversarial training", rows4))
    rows_k = []
    for c in cmp.get("kappa", []):
        nd = c.get("status") == NO_DATA
        rows_k.append(
            {
                "dataset": c["dataset"],
                "paper κ": fmt(c.get("paper_kappa")) or "-",
                "ours κ(G)": "no data" if nd else fmt(c.get("kappa_G")),
                "n": "" if nd else fmt(c.get("n")),
                "rank": "" if nd else fmt(c.get("rank")),
                "κ(G)³": "" if nd else fmt(c.get("kappa_G_cubed")),
                "κ(G³) measured": "" if nd else fmt(c.get("kappa_G3_direct")),
            }
        )
    out.append(("κ(G) of the training subset", rows_k))
    out.append(
        (
            "Claims checklist (rules: README 'Claims checklist')",
            [
                {
                    "#": str(c["claim"]),
                    "dataset": c.get("dataset", ""),
                    "claim": c["title"],
                    "statistic": c["statistic"],
                    "verdict": c["verdict"],
                }
                for c in cmp.get("checklist", [])
            ],
        )
    )
    return out


def grid_rows(cells: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One row per data set × task × ridge rule × ranking, one column per attack."""
    out: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for c in cells:
        key = (c["dataset"], c["task"], c["rule"], c["ranking"])
        row = out.setdefault(
            key,
            {
                "dataset": c["dataset"],
                "task": c["task"],
                "ridge": c["ridge"],
                "ranking": c["ranking"],
            },
        )
        rates = (
            f"{fmt(c['attn'])} vs {fmt(c['relu'])}"
            if c["attn"] is not None and c["relu"] is not None
            else "no data"
        )
        row[c["attack"]] = (f"×{c['ratio']:.2f} " if c["ratio"] is not None else "") + f"({rates})"
    return list(out.values())


def _styled(verdict: str) -> str:
    """A verdict in its colour; "inconclusive: models not converged" takes inconclusive's."""
    style = VERDICT_STYLE.get(verdict.split(":", 1)[0])
    return f"[{style}]{verdict}[/]" if style else verdict


def comparison_tables(cmp: dict[str, Any]) -> list[Table]:
    """Rich tables of ``comparison_rows``; verdicts coloured."""
    tables = []
    for title, rows in comparison_rows(cmp):
        t = Table(title=title, title_justify="left", header_style="bold")
        for c in rows[0] if rows else ["(none)"]:
            t.add_column(c, overflow="fold")
        for r in rows:
            cells = [_styled(v) if k == "verdict" else v for k, v in r.items()]
            t.add_row(*cells)
        tables.append(t)
    return tables


def show_comparison(cmp: dict[str, Any]) -> None:
    for t in comparison_tables(cmp):
        console.print(t)


__all__ = ["comparison_rows", "comparison_tables", "grid_rows", "reproduce", "show_comparison"]
