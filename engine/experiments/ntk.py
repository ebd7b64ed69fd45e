"""Experiment ``ntk``: does the trained network approach its NTK predictor as m grows?

One cell per (seed, model kind, width). Per cell: train (shared ``ctx.train_model``),
then compare with the infinite-width NTK predictor f_NTK (docs/protocol.md#ntk, claim 1).

Choices where the paper is silent (documented in the summary as well):

* f_NTK is kernel regression (``spec.ntk.predictor``: ridge with λ = ``spec.ntk.lam`` or
  the gradient flow to ``spec.ntk.flow_time``) with Θ∞ on the *model's* features
  (x/‖x‖ for 2L-ReLU, Cx/‖Cx‖ for MLP-Attn), on the run's training subset, computed
  once per (data set, kind, seed) in float64. Θ∞ includes the NNGP term when the
  output layer is trained.
* Targets: ±1 for binary tasks (network output [n, 1] vs f_NTK [n]); for multiclass
  one-hot 0/1 targets, and the network's logits are compared with the K kernel-
  regression outputs (the network was trained with cross-entropy, so the two live on
  different scales: the distance is still the paper's ‖f_m − f_NTK‖ over test points).
* Kernel distances ‖Θ_m − Θ∞‖_F/‖Θ∞‖_F at initialisation (the model rebuilt from
  ``tm.init_state``) and after training, on the first ``MAX_KERNEL_N`` training
  points; for multiclass only the first diagonal block Θ[:, :, 0, 0] is compared
  (Θ∞ = Θ∞ ⊗ I_K, and with a ∈ {±1} all diagonal blocks of Θ_m are equal).
* QKV-Attn (the v2 extension) has no known closed-form Θ∞: its f_NTK-based columns
  (``ntk_distance``, ``ntk_distance_rel``, ``kernel_distance_*``) are left empty, not
  faked, and its verdict rests on ``kernel_drift`` (its exact eNTK over attention and
  head). ``qkv.dk_sweep`` adds cells at the largest width per d_k (table ``qkv_dk``).
* ``kernel_drift`` is the last ‖Θ_t − Θ_0‖_F/‖Θ_0‖_F recorded during training on the
  trainer's probe subset (``tm.drift``); without one (``ntk.drift_every = 0``) it is
  the drift between our init and final kernels.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from engine import results
from engine.experiments.registry import register
from engine.experiments.work import AUTOGRAD_TWIN, FUSED_TWIN, Plan, Work
from engine.models import MODEL_LABELS
from engine.ntk import (
    analytic_ntk_for,
    empirical_ntk,
    has_structure,
    kernel_distance,
    kernel_regression,
    ntk_distance,
    paper_ntk_distances,
)
from engine.results import mean_std
from engine.results.tables import NtkDistanceRow, QkvDkRow
from engine.run.events import Artifact, Event, Log, Summary, TableRow
from engine.run.executors import Cell, run_cells

if TYPE_CHECKING:
    from engine.data.dataset import Dataset
    from engine.run.context import RunContext, TrainedModel

MAX_KERNEL_N = 2048
"""Training points used for the n×n kernel distances (the first ones; subsets are shuffled)."""
TREND_ALPHA = results.TREND_ALPHA
"""Spearman p-value below which the distance is said to fall or rise with width."""
NO_ANALYTIC = "no analytic Θ∞"
"""What the summary says where f_NTK would be, for models without a closed-form Θ∞."""
LIN_NOT_AVAILABLE = "lin_distance not available (no linearized twin in these rows)"
"""Said for QKV-Attn while the run has no linearized-twin columns."""
TARGETS = "binary: ±1 targets; multiclass: one-hot targets vs the network's logits"


def ntk_work(p: Plan) -> Work:
    """The cells' training (shared with ``train``), two eNTKs 2·N²·(d + m) and Θ∞'s
    solves 2·N³ per cell (N = n_train + n_test), and the linearized twin of every cell
    for the path it trains on: through autograd (a forward and a JVP a pass) each twin
    step counts ``AUTOGRAD_TWIN`` network steps, FLOPs and fixed cost; fused (2L-ReLU's
    and MLP-Attn's structured twins) one network step, FLOPs and fixed cost
    (``FUSED_TWIN``); x̃W₀ᵀ, computed once a twin (1/(2·epochs) of the twin's training
    FLOPs), is not counted."""
    widths = p.spec.model.widths
    w = p.training(widths)
    kernels = sum(2 * 2.0 * p.big_n**2 * (p.d + m) + 2 * p.big_n**3 for m in widths)
    w += Work(kernels * p.cells)
    steps, flops = float(p.ep * p.batches), 4.0 * p.n * p.d * p.ep  # a network's, ÷ m
    auto, fused = AUTOGRAD_TWIN, FUSED_TWIN
    return w + p.seeded(auto * flops, widths, auto * steps, fused * steps, fused * flops)


@register(
    "ntk",
    estimate=ntk_work,
    order=30,
    cells=True,
)
def run_ntk(ctx: RunContext) -> Iterator[Event]:
    sp = ctx.spec
    plan: list[Cell] = []
    name, task = sp.data.name, ""
    for seed in sp.seeds:
        ds = ctx.dataset(seed=seed)
        name, task = ds.name, ds.task
        for kind in sp.model.kinds:
            for width in sp.model.widths:
                label = f"ntk {MODEL_LABELS[kind]} m={width} seed={seed}"
                plan.append(
                    Cell(
                        f"ntk/{ds.name}/{kind}/{width}/{seed}",
                        ntk_cell,
                        (kind, width, seed),
                        seed,
                        label,
                        batch=((kind, width), seed),
                    )
                )
        if "qkv" in sp.model.kinds:  # QKV-Attn at the largest width for each d_k of qkv.dk_sweep
            width = max(sp.model.widths)
            for dk in sp.qkv.dk_sweep:
                label = f"ntk {MODEL_LABELS['qkv']} d_k={dk} m={width} seed={seed}"
                plan.append(
                    Cell(
                        f"ntk/{ds.name}/qkv/{width}/dk{dk}/{seed}",
                        dk_cell,
                        (width, seed, dk),
                        seed,
                        label,
                    )
                )
    rows: list[dict[str, Any]] = []
    for ev in run_cells(ctx, plan):
        if isinstance(ev, TableRow) and ev.table == "ntk_distance":
            rows.append(ev.row)
        yield ev
    summary = summarize(ctx.previous_rows("ntk_distance") + rows, name, task, sp)
    for line in summary["headline"]:
        if results.MARK in line:
            yield Log(line, "warning")
    yield Summary("ntk", summary)


def ntk_cell(ctx: RunContext, cell: str, kind: str, width: int, seed: int) -> Iterator[Event]:
    """One cell: train ``kind`` at ``width`` for ``seed``, then its ``ntk_distance`` row."""
    ds = ctx.dataset(seed=seed)
    tm = yield from ctx.train_model(kind, width, seed)
    f_ntk = None
    if has_analytic(tm):
        f_ntk = ctx.memo(("f_ntk", ds.name, kind, seed), lambda: _ntk_predictor(ctx, tm, ds))
    twin = yield from ctx.train_linearized(tm)
    row, drift = _cell_row(ctx, tm, ds, f_ntk, twin)
    yield Artifact("drift", drift, cell=cell)
    yield TableRow.of(row, cell=cell)


def has_analytic(tm: TrainedModel) -> bool:
    """Whether Θ∞ is known in closed form: every trainable parameter is in the two-layer
    head (2L-ReLU, MLP-Attn); not for QKV-Attn, whose attention is trained too."""
    return has_structure(tm.init_model())


def dk_cell(ctx: RunContext, cell: str, width: int, seed: int, dk: int) -> Iterator[Event]:
    """One cell of the d_k sweep: QKV-Attn with ``d_k = dk`` (table ``qkv_dk``)."""
    ds = ctx.dataset(seed=seed)
    tm = yield from ctx.train_model("qkv", width, seed, d_k=dk)
    row, _ = _cell_row(ctx, tm, ds, None)
    yield TableRow.of(QkvDkRow.from_row({**row.to_row(), "d_k": dk}), cell=cell)


def _targets(ds: Dataset, device: torch.device) -> torch.Tensor:
    """±1 [n] for binary tasks, one-hot [n, K] (float64) for multiclass."""
    if ds.task == "binary":
        return ds.y_train.to(device, torch.float64)
    return torch.nn.functional.one_hot(ds.y_train.long(), ds.n_out).to(device, torch.float64)


def ntk_ridge(spec: Any, n_train: int, task: str) -> float:
    """The ridge of f_NTK for ``spec.ntk.ridge``, by the one rule of ``engine.ridge``:
    ``objective`` = nλ/2 with λ = ``train.l2``; ``lambda`` = ``ntk.lam``; or a number."""
    from engine.ridge import resolve_ridge

    rule = spec.ntk.ridge
    lam = spec.ntk.lam if rule == "lambda" else spec.train.l2
    loss = "mse" if task == "binary" else "ce"
    return resolve_ridge(rule, n=n_train, lam=lam, loss=loss, field="ntk.ridge").value


def _ntk_predictor(ctx: RunContext, tm: TrainedModel, ds: Dataset) -> torch.Tensor:
    """f_NTK at the test points: [n_test] (binary) or [n_test, K], float64."""
    sp = ctx.spec.ntk
    model64 = tm.init_model().to(torch.float64)  # features do not depend on width or training
    xtr = ds.x_train_raw.to(ctx.device, torch.float64)
    xte = ds.x_test_raw.to(ctx.device, torch.float64)
    k_train = analytic_ntk_for(model64, xtr)
    k_test = analytic_ntk_for(model64, xte, xtr)
    return kernel_regression(
        k_train,
        k_test,
        _targets(ds, ctx.device),
        ntk_ridge(ctx.spec, ds.n_train, ds.task),
        method=sp.predictor,
        t=sp.flow_time if sp.predictor == "flow" else None,
    )


def lin_distances(
    f_m: torch.Tensor, f_lin: torch.Tensor, f_init: torch.Tensor
) -> tuple[float, float]:
    """(‖f_m − f_lin‖, ‖f_m − f_lin‖ / ‖f_m − f_m,init‖) over test outputs [n, K] (Frobenius).

    The relative distance divides by how far training moved the network's outputs, so
    0 means exactly lazy (the network is its linearization) and ≈ 1 means the twin's
    dynamics explain nothing of the network's; inf when training did not move f at all.
    """
    a, b, c = (t.reshape(t.shape[0], -1).double() for t in (f_m, f_lin, f_init))
    diff = float(torch.linalg.norm(a - b))
    moved = float(torch.linalg.norm(a - c))
    return diff, diff / moved if moved > 0 else float("inf")


def _cell_row(
    ctx: RunContext,
    tm: TrainedModel,
    ds: Dataset,
    f_ntk: torch.Tensor | None,
    twin: torch.nn.Module | None = None,
) -> tuple[NtkDistanceRow, dict[str, Any]]:
    """The ``ntk_distance`` row of one trained model (and its twin) and its drift series.

    ``f_ntk`` None (no analytic Θ∞, QKV-Attn): the f_NTK and Θ∞ columns are NaN (empty);
    ``twin`` None: the linearized-twin columns are NaN.
    """
    from engine.train import accuracy

    nan = float("nan")
    xte = ctx.to_device(ds.x_test_raw)
    with torch.no_grad():
        f_m = tm.model(xte).to(torch.float64)
        lin_abs, lin_rel, lin_acc = nan, nan, nan
        if twin is not None:
            f_lin = twin(xte).to(torch.float64)
            f_init = tm.init_model()(xte).to(torch.float64)
            lin_abs, lin_rel = lin_distances(f_m, f_lin, f_init)
            lin_acc = accuracy(f_lin, ctx.to_device(ds.y_test))
    if ds.task == "binary":
        f_m = f_m.reshape(-1)
    elif ctx.spec.ntk.compare == "probabilities":
        f_m = torch.softmax(f_m, dim=1)
    dist = ntk_distance(f_m, f_ntk) if f_ntk is not None else None

    xk = ctx.to_device(ds.x_train_raw[:MAX_KERNEL_N])
    out = None if ds.n_out == 1 else 0  # multiclass: first diagonal block (see module doc)
    init = tm.init_model()
    with torch.no_grad():
        k_inf = analytic_ntk_for(init, xk).to(torch.float64) if f_ntk is not None else None
        k_init = empirical_ntk(init, xk, output=out).to(torch.float64)
        k_final = empirical_ntk(tm.model, xk, output=out).to(torch.float64)
    if tm.drift:
        epochs = [int(e) for e, _ in tm.drift]
        series = [float(v) for _, v in tm.drift]
    else:
        epochs = [0, len(tm.history)]
        series = [0.0, kernel_distance(k_final, k_init)]
    row = NtkDistanceRow(
        model=MODEL_LABELS[tm.kind],
        dataset=ds.name,
        width=tm.width,
        seed=tm.seed,
        ntk_distance=dist.absolute if dist is not None else nan,
        ntk_distance_rel=dist.relative if dist is not None else nan,
        kernel_distance_init=kernel_distance(k_init, k_inf) if k_inf is not None else nan,
        kernel_distance_final=kernel_distance(k_final, k_inf) if k_inf is not None else nan,
        kernel_drift=series[-1],
        train_loss=float(tm.train_loss),
        test_accuracy=float(tm.test_accuracy),
        lin_distance=lin_abs,
        lin_distance_rel=lin_rel,
        lin_test_accuracy=lin_acc,
        **tm.guards(),
    )
    return row, {"epochs": epochs, "drift": series}


def trend(widths: list[int] | list[int | None], values: list[float]) -> dict[str, Any]:
    """Spearman ρ of ``values`` vs log width (over every cell) and a one-word verdict
    (``engine.results.trend``: falls / rises when p < ``TREND_ALPHA``, else flat; n/a
    with fewer than three points or two distinct widths)."""
    t = results.trend([math.nan if w is None else math.log(w) for w in widths], values, TREND_ALPHA)
    ok = math.isfinite(t.rho)
    return {"spearman_rho": t.rho if ok else None, "p_value": t.p if ok else None, "trend": t.word}


def headline(models: dict[str, Any]) -> list[str]:
    """One line per model: the trend with width and the distance at the ends of the sweep,
    marked with the cells that fail a guard (``entry["guards"]``)."""
    return [
        results.marked(line, models[label].get("guards", ""))
        for label, line in zip(models, _lines(models))
    ]


def _lines(models: dict[str, Any]) -> list[str]:
    lines = []
    for label, e in models.items():
        if e.get("f_ntk") == NO_ANALYTIC:
            ws, dr = e["widths"], e["mean_kernel_drift"]
            line = (
                f"{label}: {NO_ANALYTIC} (f_NTK columns empty); kernel drift {e['drift_trend']} "
                f"with width; m={ws[0]}→{ws[-1]}: {dr[0]:.4g}→{dr[-1]:.4g}"
            )
            ld = e.get("mean_lin_distance_rel")
            if ld:
                line += (
                    f"; distance to its linearization {e['lin_trend']}: {ld[0]:.4g}→{ld[-1]:.4g}"
                )
            else:
                line += f"; {LIN_NOT_AVAILABLE}"
            lines.append(line)
            continue
        ws, ms = e["widths"], e["mean_ntk_distance"]
        rho = e.get("spearman_rho")
        stat = f"ρ={rho:+.2f}, p={e['p_value']:.2g}" if rho is not None else "ρ n/a"
        line = f"{label}: distance {e['trend']} with width ({stat}); m={ws[0]}→{ws[-1]}: {ms[0]:.4g}→{ms[-1]:.4g}"
        paper = e.get("paper")
        if paper:
            pw = sorted(paper, key=int)
            line += f" (paper m={pw[0]}→{pw[-1]}: {paper[pw[0]]['paper']}→{paper[pw[-1]]['paper']})"
        ld = e.get("mean_lin_distance_rel")
        if ld:
            line += (
                f"; distance to its linearization (rel.) {e['lin_trend']}: {ld[0]:.4g}→{ld[-1]:.4g}"
            )
        lines.append(line)
    return lines


def summarize(rows: list[dict[str, Any]], dataset: str, task: str, spec: Any) -> dict[str, Any]:
    """The ``ntk`` section of summary.json: per model the trend, means per width, the paper's,
    and the cells that fail a guard (``failed_guards``; each model's ``guards`` note)."""
    models: dict[str, Any] = {}
    failed = results.failed_cells(rows)
    typed = [NtkDistanceRow.from_row(r) for r in rows]
    for label in dict.fromkeys(r.model for r in typed):
        mine = [r for r in typed if r.model == label]
        widths = sorted({r.width for r in mine if r.width is not None})
        dist = results.series_over_seeds(mine, "width", "ntk_distance")[label]
        means, stds = dist.mean, dist.std  # sample std over seeds, as everywhere
        rel = results.series_over_seeds(mine, "width", "ntk_distance_rel")[label].mean
        entry: dict[str, Any] = {
            **trend([r.width for r in mine], [r.ntk_distance for r in mine]),
            "widths": widths,
            "mean_ntk_distance": means,
            "std_ntk_distance": stds,
            "mean_ntk_distance_rel": rel,
            "monotone_decreasing": all(b < a for a, b in zip(means, means[1:]))
            if len(means) > 1
            else None,
            "cells": len(mine),
            "guards": results.guard_note(
                failed, label, results.cells_of(r for r in rows if r["model"] == label)
            ),
            "mean_kernel_drift": [
                mean_std(r.kernel_drift for r in mine if r.width == w).mean for w in widths
            ],
            "drift_trend": trend([r.width for r in mine], [r.kernel_drift for r in mine])["trend"],
        }
        lin = [r.lin_distance_rel for r in mine]
        if any(math.isfinite(v) for v in lin):
            entry["lin_trend"] = trend([r.width for r in mine], lin)["trend"]
            entry["mean_lin_distance_rel"] = [
                mean_std(r.lin_distance_rel for r in mine if r.width == w).mean for w in widths
            ]
        else:
            entry["lin_distance"] = LIN_NOT_AVAILABLE
        if not any(math.isfinite(r.ntk_distance) for r in mine):
            entry["f_ntk"] = NO_ANALYTIC
        paper = paper_ntk_distances(label, dataset)
        if paper is not None:
            pw = sorted(paper)
            entry["paper"] = {
                str(w): {"paper": paper[w], "ours": means[widths.index(w)] if w in widths else None}
                for w in pw
            }
            entry["paper_trend"] = trend(pw, [paper[w] for w in pw])["trend"]
        models[label] = entry
    ntk = spec.ntk
    return {
        "headline": headline(models),
        "dataset": dataset,
        "task": task,
        "models": models,
        "failed_guards": failed,
        "predictor": ntk.predictor,
        "lam": ntk.lam,
        "ridge": ntk.ridge,  # objective: n·λ/2 with the subset's n (ntk_ridge)
        "flow_time": ntk.flow_time if ntk.predictor == "flow" else None,
        "targets": TARGETS,
        "compare": ntk.compare if task != "binary" else "outputs",
        "distance": "ℓ2 norm of f_m − f_NTK over the test points (Frobenius over outputs)",
        "kernel_points": f"first {MAX_KERNEL_N} training points at most; multiclass: block (0, 0)",
        "trend_rule": f"Spearman ρ of distance vs log width over all cells; p < {TREND_ALPHA}",
        "paper_note": "paper Table 1 (v1) values where the data set matches (mnist, cifar10); "
        "the paper does not define the distance precisely or state n, so compare trends",
    }
