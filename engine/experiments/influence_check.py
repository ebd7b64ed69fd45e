"""Experiment ``influence_check``: every influence estimator against a ground truth (docs/protocol.md#influence).

The truth (``influence_check.truth``): ``pbrf`` (default), the proximal Bregman response
of the trained weights to down-weighting each removed point (``engine.influence.pbrf``,
through ``engine.malleability.check.pbrf_truth``: ``pbrf_steps`` of L-BFGS, then for
2L-ReLU and MLP-Attn the active set over the ReLU kinks to a Clarke-stationary point
(``engine.influence.pbrf_relu``), C fixed; its noise floor, ``pbrf_more_steps``, the
same after twice the L-BFGS steps); ``retrain``, retraining
without the point (steps 3 below; floor ``retrain_other_order``); or ``both``, each row
tagged with its ``truth`` and the PBRF also compared with retraining (estimator ``pbrf``
against truth ``retrain``: do the truths agree?). The PBRF statistics use only the points
whose solve met ``pbrf_tol`` (``engine.experiments.influence_check_pbrf``; the others are
named on every row, ``dropped``).

The flip protocol trusts an estimator of "what removing training point i does to the test
loss". This experiment measures that quantity directly on a small subset
(``influence_check.n_train`` points, width ``influence_check.width``) and asks which
estimator, at which ridge, stands for the trained network:

1. train the network as every experiment does (``ctx.train_model``: the run's loss,
   optimiser, L2, epochs, batch order);
2. estimators on the trained weights: kernel LOO on its empirical NTK at each ridge of
   ``influence_check.ridges`` (``lambda`` = λ, ``objective`` = nλ/2, ``nlambda`` = nλ;
   ``engine.ridge``), exactly as the flip protocol computes it before an attack; gradient
   influence (Koh & Liang; ``influence_check.gradient``, default exact: for 2L-ReLU and
   MLP-Attn the Gauss–Newton kernel solve at any width, else the dense Hessian up to
   ``influence_check.exact_max_params``; cg on request), damped by λ, on the network's
   own training loss (float64 copies of the model, in the span of the training features);
3. remove K points (the ``top`` best-ranked by the default protocol, ``flip.ridge`` and
   ``flip.ranking``, and ``random`` more drawn from the rest) one at a time and retrain from
   the same initialisation on the same batches with the point's weight zeroed
   (``engine.train.train``, ``exclude``); MLP-Attn's C is recomputed without the point
   (``influence_check.context = "refit"``) or kept (``"fixed"``, what the estimators hold
   fixed). The true effect is Δ[t, i] = loss_t(retrained without i) − loss_t(retrained on
   all), the network's own per-example loss (squared error, or cross-entropy for K classes);
4. compare per point through s_i = mean_t (``engine.influence.retrain.agreement``):
   Spearman ρ and the fraction of points whose sign agrees.

``influence_check.noise_floor`` also retrains everything with another batch order and
compares those effects with the truth (estimator ``retrain_other_order``): the best any
estimator can hope for when the effect of one point is partly the chaos of training
(1.0 for full-batch GD, where batch order does not exist).

One cell per (seed, model). Rows go to ``influence_check`` (one per estimator and ridge);
the summary names, per model, the estimator closest to retraining. Only when asked:
``--experiment all`` leaves it out (it retrains K + 1 times per model and seed).
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import torch

from engine.experiments.influence_check_cost import influence_check_work
from engine.experiments.influence_check_pbrf import judged_columns, pbrf_cell_truth
from engine.experiments.influence_check_summary import (
    ESTIMATOR_LABELS,
    NOISES,
    summarize,
)
from engine.experiments.registry import register
from engine.malleability.check import (
    gradient_estimates,
    kernel_estimates,
    ridge_key,
)
from engine.models import MODEL_LABELS
from engine.results.tables import InfluenceCheckRow
from engine.run.context import batch_seed
from engine.run.events import (
    Artifact,
    Event,
    Log,
    Progress,
    Summary,
    TableRow,
)

if TYPE_CHECKING:
    from engine.data.dataset import Dataset
    from engine.run.context import RunContext, TrainedModel

__all__ = ["ESTIMATOR_LABELS", "run_influence_check", "summarize"]

OTHER_ORDER = 1_000_003  # added to the batch seed for the noise-floor retraining


@register(
    "influence_check",
    estimate=influence_check_work,
    order=45,
    cells=True,
    in_all=False,
    sizes=lambda sp: (sp.influence_check.n_train, sp.influence_check.n_test),
)
def run_influence_check(ctx: RunContext) -> Iterator[Event]:
    from engine.run.executors import Cell, run_cells

    sp, ic = ctx.spec, ctx.spec.influence_check
    rows: list[dict[str, Any]] = ctx.previous_rows("influence_check")
    name = sp.data.name
    plan = []
    for seed in sp.seeds:
        name = ctx.dataset(seed=seed, n_train=ic.n_train, n_test=ic.n_test).name
        for kind in sp.model.kinds:
            plan.append(
                Cell(
                    f"influence_check/{name}/{kind}/{seed}",
                    check_cell,
                    (kind, seed),
                    seed,
                    f"influence check {MODEL_LABELS[kind]} seed={seed}",
                    (ic.n_train, ic.n_test),
                )
            )
    for ev in run_cells(ctx, plan):
        if isinstance(ev, TableRow) and ev.table == "influence_check":
            rows.append(ev.row)
        yield ev
    summary = summarize(rows, name)
    for line in summary["headline"]:
        yield Log(line)
    yield Summary("influence_check", summary)


def check_cell(ctx: RunContext, cell: str, kind: str, seed: int) -> Iterator[Event]:
    """One cell (any executor): train, estimate, retrain without each chosen point."""
    ic = ctx.spec.influence_check
    ds = ctx.dataset(seed=seed, n_train=ic.n_train, n_test=ic.n_test)
    yield from _cell(ctx, cell, ds, kind, seed)


def _cell(
    ctx: RunContext, cell: str, ds: Dataset, kind: str, seed: int
) -> Generator[Event, None, list[dict[str, Any]]]:
    from engine.influence.retrain import agreement, point_scores
    from engine.malleability.ranking import ranking_score, top_indices

    sp, ic = ctx.spec, ctx.spec.influence_check
    width = ic.width
    tm = yield from ctx.train_model(kind, width, seed, dataset=ds)
    rules = list(dict.fromkeys((*ic.ridges, sp.flip.ridge)))
    estimates, seconds, ridges = kernel_estimates(
        tm.model, ds, rules, l2=sp.train.l2, transductive=sp.data.transductive
    )

    # the points: the default protocol's best-ranked, then random ones from the rest
    default = estimates[("kernel_loo", ridge_key(sp.flip.ridge))]
    score = ranking_score(default, sp.flip.ranking)
    n = ds.n_train
    top = top_indices(score, min(ic.top, n)).cpu()
    rest = torch.tensor([i for i in range(n) if i not in set(top.tolist())], dtype=torch.long)
    g = torch.Generator().manual_seed(int(seed))
    rand = rest[torch.randperm(rest.numel(), generator=g)[: ic.random]]
    indices = [int(i) for i in torch.cat([top, rand])]
    estimates = {k: v[:, indices] for k, v in estimates.items()}
    grad, g_secs, g_labels, notes = gradient_estimates(
        tm.model,
        ds,
        indices,
        methods=ic.gradient,
        l2=sp.train.l2,
        exact_max_params=ic.exact_max_params,
        transductive=sp.data.transductive,
    )
    estimates.update(grad)
    seconds.update(g_secs)
    ridges.update(g_labels)
    for note in notes:
        yield Log(note, "warning")  # an event, not ctx.note: the cell may run remotely

    truths: dict[str, list[torch.Tensor]] = {}
    t_truth: dict[str, float] = {}
    pbrf_info: dict[str, Any] = {}
    pb = None
    if ic.truth in ("pbrf", "both"):
        pb = yield from pbrf_cell_truth(ctx, tm, ds, indices, cell)
        truths["pbrf"], t_truth["pbrf"], pbrf_info = pb.effects, pb.seconds, pb.info
    if ic.truth in ("retrain", "both"):
        t0 = time.perf_counter()
        truths["retrain"] = yield from _retrain(ctx, tm, kind, width, seed, indices, cell)
        t_truth["retrain"] = time.perf_counter() - t0

    def row(estimator: str, ridge: str, a: Any, secs: float, truth: str) -> InfluenceCheckRow:
        return InfluenceCheckRow(
            model=MODEL_LABELS[kind],
            dataset=ds.name,
            seed=seed,
            width=width,
            n_train=n,
            context="none" if kind == "relu" else ic.context if truth == "retrain" else "fixed",
            estimator=estimator,
            ridge=ridge,
            spearman=a.spearman,
            spearman_p=a.spearman_p,
            sign_agreement=a.sign_agreement,
            n_points=a.n_points,
            seconds=round(secs, 4),
            truth=truth,
            truth_converged=pb.enough if pb is not None and truth == "pbrf" else None,
            n_dropped=int((~pb.keep).sum())
            if pb is not None and "pbrf" in (truth, estimator)
            else 0,  # retraining leaves no point out (an integer column is never empty)
            dropped=pb.dropped(indices) if pb is not None and "pbrf" in (truth, estimator) else "",
            **tm.guards(),
        )

    def judged(est: torch.Tensor, truth: torch.Tensor, name: str) -> Any:
        # a PBRF point whose solve missed pbrf_tol never enters a statistic
        if pb is not None and name == "pbrf":
            est, truth = judged_columns(pb.keep, est, truth)
        return agreement(est, truth)

    rows: list[InfluenceCheckRow] = []
    scores: dict[str, list[float]] = {}
    for key, est in estimates.items():
        scores[f"{key[0]} {ridges[key]}"] = point_scores(est).tolist()
    for name, (truth, *floor) in truths.items():
        scores[name] = point_scores(truth).tolist()
        for key, est in estimates.items():
            method, _ = key
            rows.append(row(method, ridges[key], judged(est, truth, name), seconds[key], name))
        if floor:
            secs = t_truth[name] / (1 + len(floor))
            rows.append(row(NOISES[name], "", judged(floor[0], truth, name), secs, name))
            scores[NOISES[name]] = point_scores(floor[0]).tolist()
    if len(truths) == 2:  # the PBRF as an estimator of retraining: do the truths agree?
        a = judged(truths["pbrf"][0], truths["retrain"][0], "pbrf")
        rows.append(row("pbrf", "", a, t_truth["pbrf"], "retrain"))
    yield Artifact(
        "influence_check_scores",
        {
            "indices": indices,
            "n_top": int(top.numel()),
            "scores": scores,
            "train_loss": tm.train_loss,
            "train_accuracy": tm.train_accuracy,
            "test_accuracy": tm.test_accuracy,
            "truth_seconds": t_truth,
            "pbrf": pbrf_info,
        },
        cell=cell,
    )
    for r in rows:
        yield TableRow.of(r, cell=cell)
    return [r.to_row() for r in rows]


def _retrain(
    ctx: RunContext,
    tm: TrainedModel,
    kind: str,
    width: int,
    seed: int,
    indices: list[int],
    cell: str,
) -> Generator[Event, None, list[torch.Tensor]]:
    """The retraining truth [t, k] and, with the noise floor, the one with another batch
    order (module docstring, 3)."""
    from engine.influence.retrain import retraining_effects

    sp, ic = ctx.spec, ctx.spec.influence_check
    orders = [batch_seed(seed, width)] + (
        [batch_seed(seed, width) + OTHER_ORDER] if ic.noise_floor else []
    )
    if sp.train.batch_networks > 1:  # every retraining of the cell in one batched call
        return (yield from _retrain_batched(ctx, tm, kind, width, seed, orders, indices, cell))
    steps = len(orders) * (len(indices) + 1)
    truths = []
    for j, order in enumerate(orders):
        gen = retraining_effects(_fitter(ctx, tm, kind, width, seed, order), indices)
        while True:
            ctx.check_cancel()
            try:
                k = next(gen)
            except StopIteration as stop:
                truths.append(stop.value)
                break
            yield Progress(
                "cell",
                j * (len(indices) + 1) + k + 1,
                steps,
                f"retraining {MODEL_LABELS[kind]} without point {k} of {len(indices)}",
                cell=cell,
            )
    return truths


def _fitter(ctx: RunContext, tm: TrainedModel, kind: str, width: int, seed: int, order: int):
    """fit(exclude) → the retrained network's per-test losses [t] (module docstring, 3),
    each refit running the epochs ``tm`` ran."""
    from engine.train import data_loss, train

    sp, ds, cfg = ctx.spec, tm.dataset, tm.replay(ctx.spec.train)
    x, y = ctx.to_device(ds.x_train_raw), ctx.to_device(ds.y_train)
    xt, yt = ctx.to_device(ds.x_test_raw), ctx.to_device(ds.y_test)
    rows = ctx.context_rows(ds)
    refit = sp.influence_check.context == "refit" and kind != "relu"

    def fit(exclude: int | None) -> torch.Tensor:
        context = None
        if refit and exclude is not None:
            keep = torch.ones(rows.shape[0], dtype=torch.bool, device=rows.device)
            keep[exclude] = False  # a training row (test rows, when transductive, come after)
            context = rows[keep]
        model = ctx.new_model(kind, width, seed, ds, context=context)
        gen = torch.Generator().manual_seed(order)
        for _ in train(model, x, y, cfg, generator=gen, should_stop=ctx.cancelled, exclude=exclude):
            pass
        model.eval()
        with torch.no_grad():
            return data_loss(model(xt), yt, reduction="none").reshape(xt.shape[0], -1).sum(1)

    return fit


def _retrain_batched(
    ctx: RunContext,
    tm: TrainedModel,
    kind: str,
    width: int,
    seed: int,
    orders: list[int],
    indices: list[int],
    cell: str,
) -> Generator[Event, None, list[torch.Tensor]]:
    """The true effects Δ [t, K] for each batch order, as ``retraining_effects`` over
    ``_fitter`` computes them, with all (K + 1) × len(orders) retrainings trained side by
    side (``engine.train.batched``, chunks of ``train.batch_networks``): each network has
    its own order's batches, its excluded point and (refit) its own C."""
    from engine.train import data_loss
    from engine.train.batched import train_batched

    sp, ds, cfg = ctx.spec, tm.dataset, tm.replay(ctx.spec.train)
    x, y = ctx.to_device(ds.x_train_raw), ctx.to_device(ds.y_train)
    xt, yt = ctx.to_device(ds.x_test_raw), ctx.to_device(ds.y_test)
    rows = ctx.context_rows(ds)
    refit = sp.influence_check.context == "refit" and kind != "relu"
    plan = [(order, e) for order in orders for e in [None, *indices]]
    models = []
    for _, e in plan:
        context = None
        if refit and e is not None:
            keep = torch.ones(rows.shape[0], dtype=torch.bool, device=rows.device)
            keep[e] = False  # a training row (test rows, when transductive, come after)
            context = rows[keep]
        models.append(ctx.new_model(kind, width, seed, ds, context=context))
    gens = [torch.Generator().manual_seed(order) for order, _ in plan]
    total, done = len(plan) * cfg.epochs, 0
    label = f"retraining {MODEL_LABELS[kind]} without each of {len(indices)} points"
    for ev in train_batched(
        models,
        x,
        y,
        cfg,
        generators=gens,
        excludes=[e for _, e in plan],
        should_stop=ctx.cancelled,
        batch_networks=sp.train.batch_networks,
    ):
        ctx.check_cancel()
        done += len(ev.networks)
        yield Progress("cell", done, total, f"{label} (batched)", cell=cell)
    losses = []
    with torch.no_grad():
        for m in models:
            m.eval()
            out = m(xt)
            losses.append(data_loss(out, yt, reduction="none").reshape(xt.shape[0], -1).sum(1))
    k = len(indices) + 1
    truths = []
    for j in range(len(orders)):
        base = losses[j * k].to(torch.float64)
        cols = [losses[j * k + 1 + i].to(torch.float64) - base for i in range(len(indices))]
        truths.append(torch.stack(cols, dim=1))
    return truths
