"""``malleability results add|page``: a finished reproduction into docs/results/ and the
generated page (engine/reproduce/publish.py, engine/reproduce/page.py; docs/results/index.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from malleability_tui.cli.common import console, die, expected_errors

app = typer.Typer(
    help="Shipped results: import a reproduction, generate the page.", no_args_is_help=True
)

FIGURES = {"width_sweep", "flip_rates", "landscape_1d"}
"""The figures a (data set, protocol) folder gets: width sweeps with the linearized-twin
distance, flip rates with their intervals, the 1-D landscapes (small PNGs)."""

IntoOpt = Annotated[Path, typer.Option("--into", help="The results folder (default docs/results).")]


def _figures(run: Path, folder: Path, parts: list[dict[str, Any]]) -> list[Path]:
    """Draw ``FIGURES`` for ``parts`` (reproduce.json's) of ``run`` into ``folder/figures`` (flip
    rates of each part's default ridge and ranking at ε = 0.3, as the checklist reads them)."""
    from malleability_tui.cli.figures import make_figures, use_agg

    use_agg("malleability results add")
    from engine.experiments.flip_summary import protocol_rows
    from engine.reproduce.publish import part_name
    from engine.run.runs import read_run
    from engine.run.spec import RunSpec

    runs: list[tuple[str, dict[str, Any]]] = []
    for part in parts:
        if not (run / part["key"] / "spec.toml").is_file():
            continue
        data = read_run(run / part["key"])
        spec = RunSpec.from_dict(part["spec"])
        flips = data["tables"].get("flip_rates")
        if flips:
            mine = protocol_rows(flips, spec.flip.ridge, spec.flip.ranking)
            eps = {float(r["eps"]) for r in mine}
            at = 0.3 if any(abs(e - 0.3) < 1e-9 for e in eps) else min(eps, default=0.3)
            data["tables"]["flip_rates"] = [r for r in mine if abs(float(r["eps"]) - at) < 1e-9]
        runs.append((part_name(part), data))
    files, _ = make_figures(runs, folder / "figures", "png", only=FIGURES, dpi=60)
    return files


@app.command("add")
def add_cmd(
    run: Annotated[
        Path,
        typer.Argument(
            help="A finished reproduction's folder (--out of reproduce) or kappa_sweep run's."
        ),
    ],
    into: IntoOpt = Path("docs/results"),
) -> None:
    """Import a finished reproduction into INTO/<dataset>/<protocol>/ (a kappa_sweep run into
    INTO/kappa/<dataset>-<classes>-n<n_train>/) and regenerate the page."""
    from engine.reproduce.page import write_page
    from engine.reproduce.publish import import_run
    from engine.reproduce.publish_kappa import is_kappa_run

    kappa = is_kappa_run(run)
    if not kappa and not (run / "reproduce.json").is_file():
        die(
            f"invalid RUN {str(run)!r}: a reproduction's folder (it has reproduce.json) "
            "or a kappa_sweep run's (it has kappa_sweep.csv)"
        )
    if into.exists() and not into.is_dir():
        die(f"invalid --into {str(into)!r}: a folder (this is a file)")
    if kappa:
        with expected_errors():
            folder = _add_kappa(run, into)
            page = write_page(into)
        console.print(f"wrote {folder}", highlight=False)
        console.print(f"wrote {page}", highlight=False)
        return
    import json

    with expected_errors():
        folders = import_run(run, into)
        meta = json.loads((run / "reproduce.json").read_text())
        for f in folders:
            keys = json.loads((f / "run.json").read_text())["parts"]
            figs = _figures(run, f, [p for p in meta["parts"] if p["key"] in keys])
            console.print(f"wrote {f} ({len(figs)} figures)", highlight=False)
        page = write_page(into)
    console.print(f"wrote {page}", highlight=False)


def _add_kappa(run: Path, into: Path) -> Path:
    """Import a kappa_sweep run (``engine.reproduce.publish_kappa``) and draw its figure
    with the figures command's own code (``make_figures``, the kappa_sweep figure only)."""
    from malleability_tui.cli.figures import make_figures, use_agg

    use_agg("malleability results add")
    from engine.reproduce.publish_kappa import import_kappa
    from engine.run.runs import read_run

    folder = import_kappa(run, into)
    make_figures(
        [(folder.name, read_run(run))], folder / "figures", "png", only={"kappa_sweep"}, dpi=60
    )
    return folder


@app.command("page")
def page_cmd(root: IntoOpt = Path("docs/results")) -> None:
    """Regenerate INTO/index.md from the committed results alone."""
    from engine.reproduce.page import write_page

    if not root.is_dir():
        die(f"invalid --into {str(root)!r}: the results folder (e.g. docs/results)")
    with expected_errors():
        page = write_page(root)
    console.print(f"wrote {page}", highlight=False)
