"""Experiments ``flip`` and ``advtrain``: influence flip rates (docs/protocol.md#influence, docs/protocol.md#evidence, docs/protocol.md#paper-numbers).

One cell per (seed, model kind) at width ``flip.width`` (``executors.run_cells``: any
executor), with a resume marker per (attack, ε) inside it; the model of each cell is
trained once (``ctx.train_model``; ``advtrain``: PGD adversarial
training with ``flip.adv_eps``) and measured with ``engine.malleability.flip_rates``:

* kernel: the scalar empirical NTK of the trained model (weights frozen, multiclass:
  the shared diagonal block), kernel LOO influence with the squared error of the kernel
  predictor (one-hot targets for 10 classes), ridge ``flip.ridge`` (default
  ``objective``: nλ/2 with λ = ``train.l2``, ``engine.ridge``);
* selection: top ``flip.top_frac`` by ``flip.ranking`` (default ``abs_signed_mean``:
  |mean_t I[t, i]|, the flip being a sign change of the same mean);
* intervention ``flip.intervention`` (default transformed) with the attack against the
  trained model's training loss in pixel space (PGD: ``flip.pgd_*``, step 2.5·ε/steps
  unless ``flip.pgd_alpha`` is set, random start seeded with the run seed; MIM:
  ``flip.mim_*``, α = ε/steps; FGSM: one step);
* sensitivity grid: ``flip.ridges`` × ``flip.rankings`` on the same trained model and the
  same attacked points (one row per protocol, columns ``ridge`` and ``ranking``).

Rows go to ``flip_rates`` (training = standard | adversarial); the summary
(``summarize``) gives the default protocol's flip rates (mean ± std over seeds, pooled
95% Wilson interval from the integer counts) beside the paper's, the MLP-Attn / 2L-ReLU
ratio per attack, and the ratio for every protocol of the grid.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from engine.experiments.flip_summary import summarize
from engine.experiments.registry import register
from engine.experiments.work import Plan, Work
from engine.models import MODEL_LABELS
from engine.results import MARK
from engine.results.tables import FlipRateRow
from engine.run.events import (
    Artifact,
    CellFinished,
    Event,
    Log,
    Progress,
    Summary,
    TableRow,
)
from engine.run.executors import Cell, run_cells
from engine.run.training import train_group

if TYPE_CHECKING:
    from engine.run.context import RunContext
    from engine.run.spec import FlipSpec

__all__ = ["attack_options", "flip_cell", "flip_cell_id", "run_advtrain", "run_flip", "summarize"]


def advtrain_work(p: Plan) -> Work:
    """Adversarial training (``Plan.adversarial``: a fused kind's seeds stacked): 6·n·d·m
    per pass, (1 + ``flip.adv_training_steps()``) passes a step; then the attacks."""
    fl = p.spec.flip
    k = fl.adv_training_steps()
    flops = 6.0 * p.n * p.d * fl.width * p.ep * (1 + k)
    return p.adversarial(flops, float(p.ep * p.batches), k) + p.attacks()


@register(
    "flip",
    estimate=lambda p: p.training({p.spec.flip.width}) + p.attacks(),
    order=40,
    cells=True,
)
def run_flip(ctx: RunContext) -> Iterator[Event]:
    yield from _sweep(ctx, "standard")


@register("advtrain", estimate=advtrain_work, order=50, cells=True)
def run_advtrain(ctx: RunContext) -> Iterator[Event]:
    yield from _sweep(ctx, "adversarial")


def attack_options(
    f: FlipSpec, attack: str, eps: float, engine: str | None = None
) -> dict[str, Any]:
    """The spec's options for one attack at radius ``eps``, as ``engine.attacks.run_attack``
    takes them; PGD's step is ``flip.pgd_alpha`` or, unset, 2.5·ε/steps
    (``engine.attacks.pgd.resolve_alpha``); ``engine`` (``train.engine``; None: the
    attacks' default): the input gradient's path, closed form or autograd."""
    opts = _options(f, attack, eps)
    return opts if engine is None else {**opts, "engine": engine}


def _options(f: FlipSpec, attack: str, eps: float) -> dict[str, Any]:
    from engine.attacks.pgd import resolve_alpha

    if attack == "pgd":
        return {
            "steps": f.pgd_steps,
            "alpha": resolve_alpha(f.pgd_alpha, eps, f.pgd_steps),
            "random_start": f.random_start,
            "restarts": f.restarts,
            "norm": f.norm,
        }
    if attack == "mim":
        return {"steps": f.mim_steps, "decay": f.mim_decay, "norm": f.norm}
    return {"norm": f.norm}


def _sweep(ctx: RunContext, training: str) -> Iterator[Event]:
    sp, f = ctx.spec, ctx.spec.flip
    prefix = "flip" if training == "standard" else "advtrain"
    rows: list[dict[str, Any]] = []
    plan: list[Cell] = []
    name, classes = sp.data.name, sp.data.classes
    for seed in sp.seeds:
        ds = ctx.dataset(seed=seed)
        name = ds.name
        classes = None if ds.task == "multiclass" and len(ds.classes) == 10 else ds.classes
        for kind in sp.model.kinds:
            # one cell per trained model; its (attack, ε) points keep their own resume
            # markers, so a run stopped inside a cell resumes with the points left
            todo = tuple(
                (a, e)
                for a in f.attacks
                for e in f.eps
                if not ctx.is_done(flip_cell_id(prefix, ds.name, kind, seed, a, e))
            )
            if todo:
                plan.append(
                    Cell(
                        f"{prefix}/{ds.name}/{kind}/{seed}",
                        flip_cell,
                        (kind, seed, training, todo),
                        seed,
                        f"{prefix} {MODEL_LABELS[kind]} m={f.width} seed={seed}",
                        batch=(train_group(kind, f.width, training != "standard"), seed),
                    )
                )
    for ev in run_cells(ctx, plan):
        if isinstance(ev, TableRow) and ev.table == "flip_rates":
            rows.append(ev.row)
        yield ev
    previous = [r for r in ctx.previous_rows("flip_rates") if r["training"] == training]
    summary = summarize(previous + rows, name, classes, training, f)
    for line in summary["headline"]:
        yield Log(line, "warning" if MARK in line else "info")
    yield Summary(prefix, summary)


def flip_cell_id(prefix: str, dataset: str, kind: str, seed: int, attack: str, eps: float) -> str:
    """The resume marker of one (attack, ε) point of a flip / advtrain cell."""
    return f"{prefix}/{dataset}/{kind}/{attack}/{eps:g}/{seed}"


def flip_cell(
    ctx: RunContext,
    cell: str,
    kind: str,
    seed: int,
    training: str,
    todo: tuple[tuple[str, float], ...],
) -> Iterator[Event]:
    """One cell (any executor): train ``kind`` at ``flip.width`` for ``seed`` (``training``:
    standard or adversarial), then the ``flip_rates`` rows of each (attack, ε) of ``todo``,
    each point ending with its own ``CellFinished``."""
    from engine.malleability import FlipOptions, flip_rates

    sp, f = ctx.spec, ctx.spec.flip
    prefix = "flip" if training == "standard" else "advtrain"
    ds = ctx.dataset(seed=seed)
    tm = yield from ctx.train_model(kind, f.width, seed, adversarial=training == "adversarial")
    guards = tm.guards()
    protocols = f.protocols()
    for j, (attack, eps) in enumerate(todo):
        point = flip_cell_id(prefix, ds.name, kind, seed, attack, eps)
        ctx.check_cancel()
        label = f"{prefix} {MODEL_LABELS[kind]} {attack} ε={eps:g} seed={seed}"
        yield Progress("cell", j, len(todo), label, cell=cell)
        opts = FlipOptions(
            protocols=protocols,
            l2=sp.train.l2,
            attack=attack,
            eps=eps,
            top_frac=f.top_frac,
            intervention=f.intervention,
            retrain=f.retrain,
            transductive=sp.data.transductive,
            seed=seed,
            attack_opts=attack_options(f, attack, eps, sp.train.engine),
        )
        results = flip_rates(tm.model, ds, options=opts)
        for res in results:
            row = FlipRateRow(
                model=MODEL_LABELS[kind],
                dataset=ds.name,
                attack=attack,
                eps=eps,
                training=training,
                seed=seed,
                flip_rate=res.flip_rate,
                spearman=res.spearman,
                topk_overlap=res.topk_overlap,
                n_selected=res.n_selected,
                ridge=res.ridge_label,
                ranking=res.ranking,
                n_flipped=res.n_flipped,
                n_helpful=res.n_helpful,
                flipped_helpful=res.flipped_helpful,
                flipped_harmful=res.flipped_harmful,
                **guards,
            )
            yield Artifact(
                "flip_scores",
                {
                    "ridge": res.ridge_label,
                    "ranking": res.ranking,
                    "selected": res.selected,
                    "influence_before": res.influence_before,
                    "influence_after": res.influence_after,
                    "score_before": res.score_before,
                    "score_after": res.score_after,
                    "ci_low": res.ci_low,
                    "ci_high": res.ci_high,
                    "attack_loss_gain": res.attack_loss_gain,
                },
                cell=point,
            )
            yield TableRow.of(row, cell=point)
        yield CellFinished(point)
    label = f"{prefix} {MODEL_LABELS[kind]} seed={seed} done"
    yield Progress("cell", len(todo), len(todo), label, cell=cell)
