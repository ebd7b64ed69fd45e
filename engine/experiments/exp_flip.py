"""Experiments ``flip`` and ``advtrain``: influence flip rates (PAPER.md §6, §6a, Tables 2–4).

One cell per (seed, model kind, attack, ε) at width ``flip.width``; the model of each
(seed, kind) is trained once (``ctx.train_model``; ``advtrain``: PGD adversarial
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

from engine.errors import ConfigError
from engine.experiments.events import (
    Artifact,
    CellFinished,
    Event,
    Log,
    Progress,
    Summary,
    TableRow,
)
from engine.experiments.flip_summary import summarize
from engine.experiments.registry import register
from engine.models import MODEL_LABELS
from engine.results import MARK

if TYPE_CHECKING:
    from engine.experiments.context import RunContext
    from engine.experiments.spec import FlipSpec

__all__ = ["attack_options", "run_advtrain", "run_flip", "summarize"]


@register(
    "flip",
    "Influence flip rates of the top-10% training points under FGSM/PGD/MIM (Tables 2–3)",
    order=40,
)
def run_flip(ctx: RunContext) -> Iterator[Event]:
    yield from _sweep(ctx, "standard")


@register("advtrain", "Flip rates of PGD-adversarially trained models (Table 4)", order=50)
def run_advtrain(ctx: RunContext) -> Iterator[Event]:
    yield from _sweep(ctx, "adversarial")


def attack_options(f: FlipSpec, attack: str, eps: float) -> dict[str, Any]:
    """The spec's options for one attack at radius ``eps``, as ``engine.attacks.run_attack``
    takes them; PGD's step is ``flip.pgd_alpha`` or, unset, 2.5·ε/steps
    (``engine.attacks.pgd.resolve_alpha``)."""
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
    from engine.malleability import flip_rates

    sp, f = ctx.spec, ctx.spec.flip
    if f.retrain:
        raise ConfigError(
            "flip.retrain",
            True,
            "not supported yet: influences are recomputed with the trained weights frozen (paper)",
        )
    prefix = "flip" if training == "standard" else "advtrain"
    protocols = f.protocols()
    total = len(sp.seeds) * len(sp.model.kinds) * len(f.attacks) * len(f.eps)
    rows: list[dict[str, Any]] = []
    done = 0
    name, classes = sp.data.name, sp.data.classes
    for seed in sp.seeds:
        ds = ctx.dataset(seed=seed)
        name = ds.name
        classes = None if ds.task == "multiclass" and len(ds.classes) == 10 else ds.classes
        for kind in sp.model.kinds:
            cells = {
                (a, e): f"{prefix}/{ds.name}/{kind}/{a}/{e:g}/{seed}"
                for a in f.attacks
                for e in f.eps
            }
            todo = [(a, e) for (a, e), c in cells.items() if not ctx.is_done(c)]
            done += len(cells) - len(todo)
            if not todo:
                continue
            ctx.check_cancel()
            tm = yield from ctx.train_model(
                kind, f.width, seed, adversarial=training == "adversarial"
            )
            guards = tm.guards()
            for attack, eps in todo:
                cell = cells[(attack, eps)]
                ctx.check_cancel()
                yield Progress(
                    "sweep",
                    done,
                    total,
                    f"{prefix} {MODEL_LABELS[kind]} {attack} ε={eps:g} seed={seed}",
                )
                results = flip_rates(
                    tm.model,
                    ds,
                    protocols=protocols,
                    l2=sp.train.l2,
                    attack=attack,
                    eps=eps,
                    top_frac=f.top_frac,
                    intervention=f.intervention,
                    transductive=sp.data.transductive,
                    seed=seed,
                    attack_opts=attack_options(f, attack, eps),
                )
                for res in results:
                    row = {
                        "model": MODEL_LABELS[kind],
                        "dataset": ds.name,
                        "attack": attack,
                        "eps": eps,
                        "training": training,
                        "seed": seed,
                        "flip_rate": res.flip_rate,
                        "spearman": res.spearman,
                        "topk_overlap": res.topk_overlap,
                        "n_selected": res.n_selected,
                        "ridge": res.ridge_label,
                        "ranking": res.ranking,
                        "n_flipped": res.n_flipped,
                        "n_helpful": res.n_helpful,
                        "flipped_helpful": res.flipped_helpful,
                        "flipped_harmful": res.flipped_harmful,
                        **guards,
                    }
                    rows.append(row)
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
                        cell=cell,
                    )
                    yield TableRow("flip_rates", row, cell=cell)
                yield CellFinished(cell)
                done += 1
    yield Progress("sweep", total, total, f"{prefix} done")
    previous = [r for r in ctx.previous_rows("flip_rates") if r["training"] == training]
    summary = summarize(previous + rows, name, classes, training, f)
    for line in summary["headline"]:
        yield Log(line, "warning" if MARK in line else "info")
    yield Summary(prefix, summary)
