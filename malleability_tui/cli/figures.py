"""``malleability figures``: paper-style figures with matplotlib (the optional ``plots`` extra)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from malleability_tui.cli.common import console, die, expected_errors
from malleability_tui.cli.runs import RunOrReproduce, resolve_run

FIGURE_NEEDS = {
    "train_curves": "train (or any experiment that trains: ntk, flip, landscape)",
    "train_accuracy": "train",
    "table1_ntk_distance": "ntk",
    "width_sweep": "ntk (with the linearized twin)",
    "spectrum_G_G3": "spectrum",
    "flip_rates": "flip",
    "table4_adversarial": "advtrain",
    "landscape_1d": "landscape",
    "landscape_2d": "landscape",
    "trainability": "trainability",
    "kappa_sweep": "kappa_sweep",
}
"""Each figure and the experiment whose rows it is drawn from."""


def train_curves(run: dict[str, Any]) -> dict[str, tuple[list[float], list[float]]]:
    """cell → (steps, training loss) from the run's events.jsonl (the live ``train_loss``
    metric; the CSVs keep only the last value). Empty when the run has no such events."""
    from engine.run.runs import train_curves as curves

    return curves(run["path"]) if run.get("path") else {}


def _unconverged(rows: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(model, width, seed) of the rows whose ``converged`` is False."""
    return {
        (str(r.get("model")), str(r.get("width")), str(r.get("seed")))
        for r in rows
        if str(r.get("converged", "")).lower() == "false"
    }


def _width_panel(ax: Any, rows: list[dict[str, Any]], typed: list[Any], column: str) -> None:
    """One panel of ``column`` against width (log2 x): per model the mean ± std over seeds,
    a × on each width where a seed did not converge, and the note saying what × means."""
    from engine.results import num, series_over_seeds

    bad = _unconverged(rows)
    for model, ser in series_over_seeds(typed, "width", column).items():
        bar = ax.errorbar(ser.x, ser.mean, yerr=ser.std, marker="o", capsize=3, label=model)
        xs = sorted(
            {
                num(r["width"])
                for r in rows
                if (str(r["model"]), str(r["width"]), str(r["seed"])) in bad
                and str(r["model"]) == model
            }
        )
        ys = [ser.mean[ser.x.index(x)] for x in xs if x in ser.x]
        if ys:
            ax.plot([x for x in xs if x in ser.x], ys, "x", ms=10, color=bar[0].get_color())
    if bad:
        ax.text(0.01, 0.01, "× not converged", transform=ax.transAxes, fontsize="small")
    ax.set_xscale("log", base=2)


def use_agg(command: str) -> None:
    """Load matplotlib with the Agg backend for ``command`` (figures are files), or end it
    in one line: the [plots] extra missing, or a matplotlibrc matplotlib cannot read."""
    import os

    # Agg whatever the environment names (matplotlib's import refuses an unknown
    # $MPLBACKEND with a ValueError, and an interactive one would need a display)
    os.environ.pop("MPLBACKEND", None)
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
    except ImportError:
        from engine.errors import needs_extra

        die(needs_extra("plots", command))
    except ValueError as e:  # a matplotlibrc it cannot read
        die(f"cannot load matplotlib: {' '.join(str(e).split())[:200]}")


def make_figures(
    runs: list[tuple[str, dict[str, Any]]],
    to: Path,
    fmt: str,
    *,
    only: set[str] | None = None,
    dpi: float | None = None,
) -> tuple[list[Path], list[str]]:
    """Write every figure the runs' rows allow; returns (files written, figures missing as
    ``name: needs the EXPERIMENT experiment``). Unconverged cells are marked (×, dashed).

    Names follow the paper: train_curves, train_accuracy, table1_ntk_distance,
    width_sweep (the distance to the linearized twin, ``lin_distance_rel``, against width,
    mean ± std over seeds), spectrum_G_G3, table2/3_flip_rates (pooled over seeds, 95 %
    Wilson intervals), table4_adversarial, landscape_1d, landscape_2d, trainability
    (steps to the target loss against κ(G), log–log; censored points hollow at the cap)
    and kappa_sweep (flip rate, claim-1 slope and ratio against κ(G), log x; points that
    failed a guard hollow), each prefixed by the run label. ``only``: the figure kinds to
    write (None: all); ``dpi``: matplotlib's default when None.
    """
    import matplotlib.pyplot as plt

    from engine.experiments.flip_summary import pooled, typed
    from engine.kinds import MODEL_LABELS
    from engine.results import mean_std, num
    from engine.results.tables import EigenvalueRow, LandscapeRow, NtkDistanceRow, TrainabilityRow

    files: list[Path] = []
    made: set[str] = set()

    def save(fig: Any, name: str, kind: str) -> None:
        if only is not None and kind not in only:
            plt.close(fig)
            return
        to.mkdir(parents=True, exist_ok=True)  # only once there is a figure to put in it
        p = to / f"{name}.{fmt}"
        fig.tight_layout()
        fig.savefig(p, dpi=dpi) if dpi else fig.savefig(p)
        plt.close(fig)
        files.append(p)
        made.add(kind)

    for label, run in runs:
        t = run["tables"]
        binary = "binary" in label or bool(run["spec"].get("data", {}).get("classes"))
        curves = train_curves(run)
        if curves:
            from malleability_tui.views.training import cell_label

            bad = _unconverged(t.get("train", []) + t.get("ntk_distance", []))
            fig, ax = plt.subplots(figsize=(5, 3.5))
            for cell, (xs, ys) in sorted(curves.items()):
                parts = cell.split("/")  # experiment/dataset/kind/width/seed
                key = (MODEL_LABELS.get(parts[2], parts[2]), parts[3], parts[-1])
                un = len(parts) >= 5 and key in bad
                name = cell_label(cell) + (" (not converged)" if un else "")
                ax.plot(xs, ys, linestyle="--" if un else "-", label=name)
            ax.set_yscale("log")
            ax.set(xlabel="epoch", ylabel="training loss", title=f"Training loss ({label})")
            if len(curves) <= 12:
                ax.legend(fontsize="x-small")
            save(fig, f"{label}_train_curves", "train_curves")
        if t.get("train"):
            fig, ax = plt.subplots(figsize=(5, 3.5))
            bad = _unconverged(t["train"])
            for model in sorted({str(r["model"]) for r in t["train"]}):
                pts = [r for r in t["train"] if str(r["model"]) == model]
                ok = [r for r in pts if (model, str(r["width"]), str(r["seed"])) not in bad]
                no = [r for r in pts if r not in ok]
                (line,) = ax.plot(
                    [num(r["width"]) for r in ok], [num(r["test_accuracy"]) for r in ok], "o"
                )
                ax.plot(
                    [num(r["width"]) for r in no],
                    [num(r["test_accuracy"]) for r in no],
                    "x",
                    color=line.get_color(),
                    label=f"{model} (× not converged)" if no else None,
                )
                line.set_label(model)
            ax.set_xscale("log", base=2)
            ax.set(xlabel="width m", ylabel="test accuracy", title=f"Test accuracy ({label})")
            ax.legend(fontsize="small")
            save(fig, f"{label}_train_accuracy", "train_accuracy")
        if t.get("ntk_distance"):
            fig, ax = plt.subplots(figsize=(5, 3.5))
            ntk = [NtkDistanceRow.from_row(r) for r in t["ntk_distance"]]
            _width_panel(ax, t["ntk_distance"], ntk, "ntk_distance")
            ax.set(
                xlabel="width m", ylabel="‖f_m − f_NTK‖", title=f"NTK distance vs width ({label})"
            )
            ax.legend()
            save(fig, f"{label}_table1_ntk_distance", "table1_ntk_distance")
            if any(math.isfinite(r.lin_distance_rel) for r in ntk):
                fig, ax = plt.subplots(figsize=(5, 3.5))
                _width_panel(ax, t["ntk_distance"], ntk, "lin_distance_rel")
                ax.set_yscale("log")
                ax.set(
                    xlabel="width m",
                    ylabel="‖f_m − f_lin‖ / ‖f_lin‖",
                    title=f"Distance to the linearized twin ({label})",
                )
                ax.legend()
                save(fig, f"{label}_width_sweep", "width_sweep")
        if t.get("eigenvalues"):
            ev = [EigenvalueRow.from_row(r) for r in t["eigenvalues"]]
            fig, ax = plt.subplots(figsize=(5, 3.5))
            idx = [num(r.index) for r in ev]
            for col, name in (("eig_G", "G = XXᵀ"), ("eig_G3", "G³")):
                ys = [float(getattr(r, col)) for r in ev]
                ax.semilogy(
                    [i for i, y in zip(idx, ys) if y > 0], [y for y in ys if y > 0], label=name
                )
            ax.set(xlabel="index", ylabel="eigenvalue", title=f"Spectra of G and G³ ({label})")
            ax.legend()
            save(fig, f"{label}_spectrum_G_G3", "spectrum_G_G3")
        flips = [r for r in typed(t.get("flip_rates", [])) if math.isfinite(r.flip_rate)]
        std = [r for r in flips if r.training == "standard"]
        if std:
            attacks = sorted({r.attack for r in std})
            models = sorted({r.model for r in std})
            fig, ax = plt.subplots(figsize=(5, 3.5))
            wbar = 0.8 / max(len(models), 1)
            for j, m in enumerate(models):
                pools = [
                    pooled([r for r in std if r.model == m and r.attack == a]) for a in attacks
                ]
                mean = [pc["pooled"] if pc else math.nan for pc in pools]
                lo = [pc["pooled"] - pc["ci_low"] if pc else 0.0 for pc in pools]
                hi = [pc["ci_high"] - pc["pooled"] if pc else 0.0 for pc in pools]
                xs = [i + j * wbar for i in range(len(attacks))]
                ax.bar(xs, mean, wbar, yerr=[lo, hi], capsize=3, label=m)
            ax.set_xticks(
                [i + wbar * (len(models) - 1) / 2 for i in range(len(attacks))],
                [a.upper() for a in attacks],
            )
            ax.set(ylabel="flip rate (%), 95% Wilson CI", title=f"Influence flip rate ({label})")
            ax.legend()
            save(fig, f"{label}_{'table3' if binary else 'table2'}_flip_rates", "flip_rates")
        adv = [r for r in flips if r.attack == "pgd"]
        if any(r.training == "adversarial" for r in adv):
            fig, ax = plt.subplots(figsize=(5, 3.5))
            models = sorted({r.model for r in adv})
            for j, tr in enumerate(("standard", "adversarial")):
                vals = [
                    [100 * r.flip_rate for r in adv if r.model == m and r.training == tr]
                    for m in models
                ]
                ax.bar(
                    [i + 0.4 * j for i in range(len(models))],
                    [mean_std(v).mean for v in vals],
                    0.4,
                    label=tr,
                )
            ax.set_xticks([i + 0.2 for i in range(len(models))], models)
            ax.set(ylabel="PGD flip rate (%)", title=f"Standard vs adversarial training ({label})")
            ax.legend()
            save(fig, f"{label}_table4_adversarial", "table4_adversarial")
        land = [LandscapeRow.from_row(r) for r in t.get("landscape", [])]
        one = [r for r in land if r.direction == "1d"]
        if one:
            fig, ax = plt.subplots(figsize=(5, 3.5))
            for m in sorted({r.model for r in one}):
                pts = sorted((r.alpha, r.loss) for r in one if r.model == m)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=m)
            ax.set(
                xlabel="α (filter-normalised)", ylabel="loss", title=f"1-D loss landscape ({label})"
            )
            ax.legend()
            save(fig, f"{label}_landscape_1d", "landscape_1d")
        two = [r for r in land if r.direction == "2d"]
        models = sorted({r.model for r in two})
        if models:
            fig, axes = plt.subplots(
                1, len(models), figsize=(4.5 * len(models), 3.8), squeeze=False
            )
            for ax, m in zip(axes[0], models):
                cells = [(r.alpha, r.beta, r.loss) for r in two if r.model == m]
                al, be = sorted({c[0] for c in cells}), sorted({c[1] for c in cells})
                grid = [[float("nan")] * len(al) for _ in be]
                for a, b, v in cells:
                    grid[be.index(b)][al.index(a)] = v
                cs = ax.contourf(al, be, grid, levels=20)
                fig.colorbar(cs, ax=ax)
                ax.set(xlabel="α", ylabel="β", title=m)
            save(fig, f"{label}_landscape_2d", "landscape_2d")
        steps = [TrainabilityRow.from_row(r) for r in t.get("trainability", [])]
        if steps:
            fig, ax = plt.subplots(figsize=(5, 3.5))
            for m in sorted({r.model for r in steps}):
                for cens in (False, True):
                    pts = sorted(
                        (r.kappa_G, num(r.steps_to_converge))
                        for r in steps
                        if r.model == m and bool(r.censored) == cens and r.kappa_G > 0
                    )
                    if pts:
                        ax.loglog(
                            [p[0] for p in pts],
                            [p[1] for p in pts],
                            "o-" if not cens else "o",
                            mfc="none" if cens else None,
                            label=m + (" (censored)" if cens else ""),
                        )
            ax.set(xlabel="κ(G)", ylabel="steps to target", title=f"Trainability vs κ ({label})")
            ax.legend()
            save(fig, f"{label}_trainability", "trainability")
        from malleability_tui.cli.figure_kappa import draw_kappa

        kfig = draw_kappa(plt, t.get("kappa_sweep", []), f"Effects against κ(G) ({label})")
        if kfig is not None:
            save(kfig, f"{label}_kappa_sweep", "kappa_sweep")
    missing = [f"{k}: needs the {v} experiment" for k, v in FIGURE_NEEDS.items() if k not in made]
    return files, missing


def figures_cmd(
    run: RunOrReproduce,
    format: Annotated[str, typer.Option("--format", "-f", help="png, pdf or svg.")] = "png",
    to: Annotated[
        Path | None, typer.Option("--to", help="Output folder (default <run>/figures).")
    ] = None,
) -> None:
    """Paper-style figures (needs the \\[plots] extra: pip install 'malleability\\[plots]')."""
    if format not in ("png", "pdf", "svg"):
        die(f"invalid --format {format!r}: png, pdf or svg")
    use_agg("malleability figures")
    from engine.run.paths import check_folder_target
    from engine.run.runs import collect

    with expected_errors():
        path = resolve_run(run, None, reproduce=True)
        target = check_folder_target(to or path / "figures", "to", own=path / "figures")
        files, missing = make_figures(collect(path)[1], target, format)
    # soft_wrap: a path is printed whole (a terminal may fold it; a copy of it still works)
    for f in files:
        console.print(f"wrote {f}", highlight=False, markup=False, soft_wrap=True)
    for m in missing:
        console.print(f"not drawn: {m}", style="dim", highlight=False, markup=False, soft_wrap=True)
    if not files:
        die(f"no figure: {path} has none of the rows the figures need (see above)", 1)
