"""Experiment ``landscape``: loss-landscape geometry and sharpness (docs/claims.md#claim-6, docs/protocol.md#landscape).

One cell per seed and model (spec.model.kinds; ``executors.run_cells``: any executor) at
width ``spec.landscape.width``:

- 1-D curve L(θ* + αδ) along one filter-normalised random direction δ, the 2-D
  surface L(θ* + αδ + βη), and the interpolation L((1 − t)θ₀ + tθ*) with
  t ∈ [−0.25, 1.25] (``engine.landscape.interpolation_grid(points_1d)``), on the
  split(s) of ``spec.landscape.split``. The directions are drawn from
  ``torch.Generator().manual_seed(seed)``, so both models see the same Gaussian
  draw, each rescaled to its own weights.
- Sharpness on the *training* set (whatever the split): the top Hessian
  eigenvalue by Lanczos (cap ``hessian_iters``, relative tolerance
  ``hessian_tol``), Hutchinson's trace (``hutchinson_samples`` Rademacher
  probes) and the adaptive sharpness of Kwon et al. (2021) (``ADAPTIVE_RHO``,
  ``ADAPTIVE_STEPS`` ascent steps, seeded by seed + 2;
  ``engine.landscape.adaptive_sharpness``). The loss is the training data loss
  without the L2 term.

Table ``landscape`` (model, direction, alpha, beta, loss): the curves of the first
seed only (the table has no seed column, and plots draw one curve per model);
``direction`` is ``1d``, ``2d`` or ``interp`` (``alpha`` holds t), suffixed
``:train``/``:test`` when split = both. ``beta`` is empty for 1-D rows (an empty CSV
cell, null in JSON; pandas reads it as NaN). Every seed's 2-D surface is also an
``Artifact`` named ``landscape_2d``.

Table ``sharpness`` (model, seed, hessian_top_eig, hessian_trace, width_1d, width_delta,
width_censored, width_span, adaptive_sharpness, adaptive_rho): every seed. ``width_1d``
is the 1-D basin width below (the training curve) and ``adaptive_sharpness`` the largest
loss rise over the ball ‖ε/|w|‖₂ ≤ ρ: the measures claim 6 is decided on, both invariant
under the ReLU rescaling w_r → c·w_r, a_r → a_r/c, which moves λ_max by up to c²
(docs/claims.md#claim-6).

Summary ``landscape``: per model mean ± std over seeds of λ_max, tr H, adaptive sharpness and the 1-D
basin width (``curve_width`` with mode absolute: the α-interval around 0 where
L ≤ L(0) + WIDTH_DELTA on the training curve), and which model is flatter by each
measure with the ratio of means and the per-seed ratios (mean ± std); ``interp_min_t``,
the t of the lowest training objective (data loss + (λ/2)‖θ‖² on the training set) on the
init → trained interpolation (1 when training reached the minimum along that line; NaN
with split = test); each line marked with the cells that fail a guard
(``engine.results.guards``; ``failed_guards``).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import torch

from engine.experiments.registry import register
from engine.experiments.work import Plan, Work
from engine.landscape import (
    ADAPTIVE_STEPS,
    adaptive_sharpness,
    basin_width,
    filter_normalized_direction,
    hessian_top_eigenvalue,
    hessian_trace,
    interpolate,
    surface_1d,
    surface_2d,
)
from engine.models import MODEL_LABELS
from engine.results import MARK, cells_of, failed_cells, guard_note, marked, mean_std, ratio
from engine.results.tables import LandscapeRow, SharpnessRow
from engine.run.events import (
    Artifact,
    Event,
    Log,
    Progress,
    Summary,
    TableRow,
    decode_floats,
    encode_floats,
)
from engine.run.executors import Cell, run_cells

if TYPE_CHECKING:
    from engine.run.context import RunContext, TrainedModel

WIDTH_DELTA = 0.1
"""Loss rise above L(0) that bounds the 1-D basin whose width is reported (loss units)."""
WIDTH_MAX_SPAN = 16.0
"""Widest grid (filter-normalised units) the width's scan widens to from ``landscape.span``
(doubling, same spacing) before calling the basin censored: at span 1 the digits basins
all reached the grid's end, so every width was a lower bound."""


def landscape_work(p: Plan) -> Work:
    """The networks (shared with the experiments that train that width), then
    2·n·d·m per surface point and 4·n·d·m per Hessian-vector product, each an autograd
    pass."""
    la = p.spec.landscape
    points = la.points_1d + la.points_2d**2
    hvps = la.hessian_iters + la.hutchinson_samples + ADAPTIVE_STEPS + 1  # + the ascent's gradients
    w = p.training({la.width})
    flops = (2.0 * points + 4.0 * hvps) * p.n * p.d * la.width * p.cells
    return w + Work(flops, float((points + hvps) * p.cells))


@register(
    "landscape",
    estimate=landscape_work,
    order=60,
    cells=True,
)
def run_landscape(ctx: RunContext) -> Iterator[Event]:
    sp = ctx.spec
    ls = sp.landscape
    cells = [(s, k) for s in sp.seeds for k in sp.model.kinds]
    # resumed cells: their results as the earlier run wrote them
    results: list[dict[str, Any]] = [
        decode_floats(r) for r in ctx.previous_artifacts("landscape_result")
    ]
    name = sp.data.name
    plan: list[Cell] = []
    for seed, kind in cells:
        name = ctx.dataset(seed=seed).name
        plan.append(
            Cell(
                f"landscape/{name}/{kind}/{ls.width}/{seed}",
                landscape_cell,
                (kind, seed, seed == sp.seeds[0]),
                seed,
                f"landscape {MODEL_LABELS[kind]} m={ls.width} seed={seed}",
                batch=((kind, ls.width), seed),
            )
        )
    for ev in run_cells(ctx, plan):
        if isinstance(ev, Artifact) and ev.name == "landscape_result":
            results.append(decode_floats(ev.data))
        yield ev
    pos = {(s, MODEL_LABELS[k]): j for j, (s, k) in enumerate(cells)}
    results.sort(key=lambda r: pos.get((r["seed"], r["model"]), len(pos)))
    summary = summarize(results, name, ls.width)
    for line in summary["headline"]:
        if MARK in line:
            yield Log(line, "warning")
    yield Summary("landscape", summary)


def landscape_cell(ctx: RunContext, cell: str, kind: str, seed: int, rows: bool) -> Iterator[Event]:
    """One cell (any executor): train ``kind`` at ``landscape.width`` for ``seed``, then its
    curves, surfaces and sharpness (``rows``: the curves go to table ``landscape`` too)."""
    ls = ctx.spec.landscape
    splits = ("train", "test") if ls.split == "both" else (ls.split,)
    tm = yield from ctx.train_model(kind, ls.width, seed)
    res = yield from _measure(ctx, tm, splits, cell, rows=rows)
    yield Artifact("landscape_result", encode_floats(res), cell=cell)


def _measure(
    ctx: RunContext, tm: TrainedModel, splits: tuple[str, ...], cell: str, *, rows: bool
) -> Generator[Event, None, dict[str, Any]]:
    ls = ctx.spec.landscape
    ds, model, seed = tm.dataset, tm.model, tm.seed
    label = MODEL_LABELS[tm.kind]
    data = {
        "train": (ctx.to_device(ds.x_train_raw), ctx.to_device(ds.y_train)),
        "test": (ctx.to_device(ds.x_test_raw), ctx.to_device(ds.y_test)),
    }
    g = torch.Generator().manual_seed(seed)
    d1 = filter_normalized_direction(model, g)
    d2 = (filter_normalized_direction(model, g), filter_normalized_direction(model, g))
    steps, done = 3 * len(splits) + 3, 0
    width_train = interp_min = width_span = float("nan")
    censored: bool | None = None
    for split in splits:
        x, y = data[split]
        tag = "" if len(splits) == 1 else f":{split}"
        ctx.check_cancel()
        c1 = surface_1d(model, x, y, direction=d1, points=ls.points_1d, span=ls.span)
        if split == "train" or len(splits) == 1:  # the grid widens until the basin closes
            bw = basin_width(
                model,
                x,
                y,
                direction=d1,
                points=ls.points_1d,
                span=ls.span,
                delta=WIDTH_DELTA,
                max_span=max(WIDTH_MAX_SPAN, ls.span),
                curve=c1,
            )
            width_train, censored, width_span = bw.width, bw.censored, bw.span
        done += 1
        yield Progress("cell", done, steps, f"{label} 1-D {split}", cell=cell)
        ctx.check_cancel()
        s2 = surface_2d(model, x, y, directions=d2, points=ls.points_2d, span=ls.span)
        done += 1
        yield Progress("cell", done, steps, f"{label} 2-D {split}", cell=cell)
        ctx.check_cancel()
        ci = interpolate(model, tm.init_state, x, y, points=ls.points_1d)
        if split == "train":
            # the objective the model minimised (data loss + (λ/2)‖θ‖²): its minimum along
            # the line sits at t = 1 when training reached it; the data loss alone keeps
            # falling past t = 1 under an L2 penalty (larger weights, sharper logits)
            obj = interpolate(model, tm.init_state, x, y, points=ls.points_1d, l2=ctx.spec.train.l2)
            interp_min = float(obj.alphas[int(obj.losses.argmin())])
        done += 1
        yield Progress("cell", done, steps, f"{label} interpolation {split}", cell=cell)
        yield Artifact(
            "landscape_2d",
            {
                "model": label,
                "seed": seed,
                "split": split,
                "alphas": s2.alphas.numpy(),
                "betas": s2.betas.numpy(),
                "losses": s2.losses.numpy(),
            },
            cell=cell,
        )
        yield Artifact(
            "landscape_1d",
            {
                "model": label,
                "seed": seed,
                "split": split,
                "alphas": c1.alphas.numpy(),
                "losses": c1.losses.numpy(),
                "interp_t": ci.alphas.numpy(),
                "interp_losses": ci.losses.numpy(),
            },
            cell=cell,
        )
        if rows:
            for a, v in zip(c1.alphas.tolist(), c1.losses.tolist()):
                yield _row(label, "1d" + tag, a, None, v, cell)
            for ia, a in enumerate(s2.alphas.tolist()):
                for ib, b in enumerate(s2.betas.tolist()):
                    yield _row(label, "2d" + tag, a, b, float(s2.losses[ia, ib]), cell)
            for t, v in zip(ci.alphas.tolist(), ci.losses.tolist()):
                yield _row(label, "interp" + tag, t, None, v, cell)
    x, y = data["train"]
    ctx.check_cancel()
    eig = hessian_top_eigenvalue(
        model,
        x,
        y,
        method="lanczos",
        iters=ls.hessian_iters,
        tol=ls.hessian_tol,
        generator=torch.Generator().manual_seed(seed),
    )
    done += 1
    yield Progress("cell", done, steps, f"{label} λ_max = {eig.value:.4g}", cell=cell)
    ctx.check_cancel()
    tr = hessian_trace(
        model,
        x,
        y,
        samples=ls.hutchinson_samples,
        generator=torch.Generator().manual_seed(seed + 1),
    )
    done += 1
    yield Progress("cell", done, steps, f"{label} tr H = {tr.value:.4g}", cell=cell)
    ctx.check_cancel()
    adaptive = adaptive_sharpness(model, x, y, generator=torch.Generator().manual_seed(seed + 2))
    done += 1
    yield Progress("cell", done, steps, f"{label} adaptive S = {adaptive.value:.4g}", cell=cell)
    guards = tm.guards()
    row = SharpnessRow(
        model=label,
        seed=seed,
        hessian_top_eig=eig.value,
        hessian_trace=tr.value,
        width_1d=width_train,
        width_delta=WIDTH_DELTA,
        width_censored=censored,
        width_span=width_span,
        adaptive_sharpness=adaptive.value,
        adaptive_rho=adaptive.rho,
        **guards,
    )
    yield TableRow.of(row, cell=cell)
    return {
        "model": label,
        "seed": seed,
        "hessian_top_eig": eig.value,
        "eig_converged": eig.converged,
        "eig_iterations": eig.iterations,
        "hessian_trace": tr.value,
        "trace_stderr": tr.stderr,
        "width_1d": width_train,
        "adaptive_sharpness": adaptive.value,
        "adaptive_converged": adaptive.converged,
        "interp_min_t": interp_min,
        "train_loss": tm.train_loss,
        **guards,
    }


def _row(
    model: str, direction: str, alpha: float, beta: float | None, loss: float, cell: str
) -> TableRow:
    b = beta if beta is not None else math.nan  # 1-D rows: no β (written empty, as NaN is)
    row = LandscapeRow(model=model, direction=direction, alpha=alpha, beta=b, loss=loss)
    return TableRow.of(row, cell=cell)


def _mean_std(v: list[float]) -> dict[str, Any]:
    m, s, n = mean_std(v)
    return {"mean": m, "std": s, "n": n}


def summarize(results: list[dict[str, Any]], dataset: str, width: int) -> dict[str, Any]:
    """Headline numbers: per-model sharpness and width, and which minimum is flatter.

    ``flatter[measure]``: the flatter model (lower λ_max / tr H, larger width; "tie"
    when the means agree), the ratio sharper/flatter of the means (≥ 1), and the
    per-seed ratios 2L-ReLU/MLP-Attn (width: MLP-Attn/2L-ReLU) as mean ± std, so > 1
    always means "MLP-Attn flatter". ``flatter_model``: the verdict the non-tied
    measures agree on, else "mixed". ``models[m]["train_loss"]`` is there to check
    that both models did reach a minimum: a model still on its initial plateau has
    a flat landscape for that reason alone.
    """
    keys = ("hessian_top_eig", "hessian_trace", "width_1d", "adaptive_sharpness")
    models: dict[str, Any] = {}
    failed = failed_cells(results)
    for label in dict.fromkeys(r["model"] for r in results):
        mine = [r for r in results if r["model"] == label]
        models[label] = {
            k: _mean_std([r.get(k, math.nan) for r in mine])
            for k in keys + ("train_loss", "interp_min_t")
        }
        models[label]["guards"] = guard_note(failed, label, cells_of(mine))
        models[label]["eig_converged"] = all(r["eig_converged"] for r in mine)
        models[label]["seeds"] = [r["seed"] for r in mine]
    out: dict[str, Any] = {
        "dataset": dataset,
        "width": width,
        "width_delta": WIDTH_DELTA,
        "models": models,
        "failed_guards": failed,
        "paper": "MLP-Attn finds wider, flatter minima than 2L-ReLU (claim 6; no numbers reported)",
    }
    relu, attn = MODEL_LABELS["relu"], MODEL_LABELS["attn"]
    if relu in models and attn in models:
        flatter: dict[str, Any] = {}
        for k in keys:
            lower_is_flat = k != "width_1d"
            mr, ma = models[relu][k]["mean"], models[attn][k]["mean"]
            by_seed = {r["seed"]: r for r in results if r["model"] == relu}
            nan = math.nan  # a result from before the measure existed lacks it
            paired = [
                ratio(by_seed[r["seed"]].get(k, nan), r.get(k, nan))
                if lower_is_flat
                else ratio(r.get(k, nan), by_seed[r["seed"]].get(k, nan))
                for r in results
                if r["model"] == attn and r["seed"] in by_seed
            ]
            if not (math.isfinite(mr) and math.isfinite(ma)):
                flatter[k] = {"flatter": None}
                continue
            if math.isclose(ma, mr, rel_tol=1e-9):
                # e.g. both 1-D curves stay under the threshold on the whole grid
                flatter[k] = {
                    "flatter": "tie",
                    "ratio": 1.0,
                    "attn_flatter_ratio_per_seed": _mean_std(paired),
                }
                continue
            attn_flat = ma < mr if lower_is_flat else ma > mr
            hi, lo = (mr, ma) if attn_flat == lower_is_flat else (ma, mr)
            flatter[k] = {
                "flatter": attn if attn_flat else relu,
                "ratio": ratio(hi, lo),  # NaN when the flatter value is 0 (a flat surface)
                "attn_flatter_ratio_per_seed": _mean_std(paired),
            }
        out["flatter"] = flatter
        verdicts = {v.get("flatter") for v in flatter.values()} - {"tie", None}
        out["flatter_model"] = (
            verdicts.pop() if len(verdicts) == 1 else "mixed" if verdicts else "tie"
        )
    out["headline"] = [
        marked(
            f"{label}: λ_max {m['hessian_top_eig']['mean']:.4g} ± {m['hessian_top_eig']['std']:.2g}, "
            f"tr H {m['hessian_trace']['mean']:.4g} ± {m['hessian_trace']['std']:.2g}, "
            f"adaptive S {m['adaptive_sharpness']['mean']:.3g}, "
            f"train loss {m['train_loss']['mean']:.4g}, init→trained minimum at t = {m['interp_min_t']['mean']:.2f}",
            m["guards"],
        )
        for label, m in models.items()
    ]
    if "flatter_model" in out:
        both = "; ".join(f"{label} {m['guards']}" for label, m in models.items() if m["guards"])
        out["headline"].append(marked(f"flatter minimum: {out['flatter_model']}", both))
    return out
