"""Experiments ``flip`` and ``advtrain``: influence flip rates (PAPER.md §6, Tables 2–4).

One cell per (seed, model kind, attack, ε) at width ``flip.width``; the model of each
(seed, kind) is trained once (``ctx.train_model``; ``advtrain``: PGD adversarial
training with ``flip.adv_eps``) and measured with ``engine.malleability.flip_rate``:

* kernel: the scalar empirical NTK of the trained model (weights frozen, multiclass:
  the shared diagonal block), ridge λ = ``flip.lam``, kernel LOO influence with the
  squared error of the kernel predictor (one-hot targets for 10 classes);
* selection: top ``flip.top_frac`` by ``flip.ranking`` (default mean |influence|);
* intervention ``flip.intervention`` (default transformed) with the attack against the
  trained model's training loss in pixel space (PGD: ``flip.pgd_*``, random start seeded
  with the run seed; MIM: ``flip.mim_*``, α = ε/steps; FGSM: one step);
* flip: the sign of the signed mean influence over the test points changed.

Rows go to ``flip_rates`` (training = standard | adversarial); the summary sets our
flip rates (mean ± std over seeds, pooled 95% Wilson interval) beside the paper's and
gives the MLP-Attn / 2L-ReLU ratio per attack.
"""

from __future__ import annotations

import math
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
from engine.experiments.registry import register
from engine.experiments.stats import mean_std
from engine.models import MODEL_LABELS

if TYPE_CHECKING:
    from engine.experiments.context import RunContext
    from engine.experiments.spec import FlipSpec

SCORE = "signed mean influence over the test points (flip = its sign changed)"
KERNEL = "empirical NTK of the trained model, weights frozen; multiclass: shared diagonal block, one-hot targets"


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


def attack_options(f: FlipSpec, attack: str) -> dict[str, Any]:
    """The spec's options for one attack, as ``engine.attacks.run_attack`` takes them."""
    if attack == "pgd":
        return {
            "steps": f.pgd_steps,
            "alpha": f.pgd_alpha,
            "random_start": f.random_start,
            "restarts": f.restarts,
            "norm": f.norm,
        }
    if attack == "mim":
        return {"steps": f.mim_steps, "decay": f.mim_decay, "norm": f.norm}
    return {"norm": f.norm}


def _sweep(ctx: RunContext, training: str) -> Iterator[Event]:
    from engine.malleability import flip_rate

    sp, f = ctx.spec, ctx.spec.flip
    if f.retrain:
        raise ConfigError(
            "flip.retrain",
            True,
            "not supported yet: influences are recomputed with the trained weights frozen (paper)",
        )
    prefix = "flip" if training == "standard" else "advtrain"
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
            for attack, eps in todo:
                cell = cells[(attack, eps)]
                ctx.check_cancel()
                yield Progress(
                    "sweep",
                    done,
                    total,
                    f"{prefix} {MODEL_LABELS[kind]} {attack} ε={eps:g} seed={seed}",
                )
                res = flip_rate(
                    tm.model,
                    ds,
                    attack=attack,
                    eps=eps,
                    top_frac=f.top_frac,
                    ranking=f.ranking,
                    intervention=f.intervention,
                    lam=f.lam,
                    transductive=sp.data.transductive,
                    seed=seed,
                    attack_opts=attack_options(f, attack),
                )
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
                }
                rows.append({**row, "n_flipped": res.n_flipped})
                yield Artifact(
                    "flip_scores",
                    {
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
    previous = [
        {**r, "n_flipped": round(r["flip_rate"] * r["n_selected"]) if math.isfinite(r["flip_rate"]) else 0}
        for r in ctx.previous_rows("flip_rates")
        if r["training"] == training
    ]
    summary = summarize(previous + rows, name, classes, training, f)
    for line in summary["headline"]:
        yield Log(line)
    yield Summary(prefix, summary)


def summarize(
    rows: list[dict[str, Any]],
    dataset: str,
    classes: tuple[int, ...] | None,
    training: str,
    f: FlipSpec,
) -> dict[str, Any]:
    """Our flip rates (percent) beside the paper's, and the MLP-Attn / 2L-ReLU ratios."""
    from engine.malleability import paper_rate_for_run, paper_table_for, wilson_interval

    table: list[dict[str, Any]] = []
    lines = []
    ratio: dict[str, dict[str, float | None]] = {}
    for attack in f.attacks:
        for eps in f.eps:
            means: dict[str, float] = {}
            for model in dict.fromkeys(["2L-ReLU", "MLP-Attn", *(r["model"] for r in rows)]):
                sel = [
                    r
                    for r in rows
                    if r["model"] == model and r["attack"] == attack and r["eps"] == eps
                ]
                if not sel:
                    continue
                m, s, _ = mean_std(100 * r["flip_rate"] for r in sel)
                k, n = sum(r["n_flipped"] for r in sel), sum(r["n_selected"] for r in sel)
                lo, hi = wilson_interval(k, n) if math.isfinite(m) else (float("nan"), float("nan"))
                paper = (
                    paper_rate_for_run(dataset, classes, training, model, attack)
                    if eps == 0.3
                    else None
                )
                means[model] = m
                table.append(
                    {
                        "model": model,
                        "attack": attack,
                        "eps": eps,
                        "flip_rate": m,
                        "std": s,
                        "seeds": len(sel),
                        "ci_low": 100 * lo,
                        "ci_high": 100 * hi,
                        "paper": paper,
                        "spearman": mean_std(r["spearman"] for r in sel)[0],
                        "topk_overlap": mean_std(r["topk_overlap"] for r in sel)[0],
                    }
                )
                p = f"{paper:.1f}%" if paper is not None else "n/a"
                lines.append(
                    f"{training} {model:8s} {attack.upper():4s} ε={eps:g}: {m:5.1f}% ± {s:.1f} "
                    f"[{100 * lo:.1f}, {100 * hi:.1f}] over {len(sel)} seed(s); paper {p}"
                )
            r = means.get("2L-ReLU")
            a = means.get("MLP-Attn")
            pr = (
                paper_rate_for_run(dataset, classes, training, "2L-ReLU", attack)
                if eps == 0.3
                else None
            )
            pa = (
                paper_rate_for_run(dataset, classes, training, "MLP-Attn", attack)
                if eps == 0.3
                else None
            )
            ratio.setdefault(attack, {})[f"{eps:g}"] = (a / r) if a is not None and r else None
            ratio[attack][f"paper_{eps:g}"] = pa / pr if pa and pr else None
    for attack, v in ratio.items():
        for key, val in v.items():
            if not key.startswith("paper_"):
                pv = v.get(f"paper_{key}")
                ours = f"×{val:.2f}" if val is not None and math.isfinite(val) else "n/a"
                lines.append(
                    f"{training} MLP-Attn / 2L-ReLU {attack.upper()} ε={key}: {ours}"
                    + (f" (paper ×{pv:.1f})" if pv else "")
                )
    return {
        "dataset": dataset,
        "classes": list(classes) if classes else None,
        "training": training,
        "paper_table": paper_table_for(dataset, classes, training),
        "width": f.width,
        "protocol": {
            "ranking": f.ranking,
            "intervention": f.intervention,
            "top_frac": f.top_frac,
            "lam": f.lam,
            "score": SCORE,
            "kernel": KERNEL,
            "loss": "squared error of the kernel predictor",
        },
        "table": table,
        "ratio_attn_relu": ratio,
        "headline": lines,
    }
