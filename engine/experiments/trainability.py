"""Experiment ``trainability``: Theorem 4.7 in training time (ours; not in the paper).

A gradient method on a linear model needs steps ∝ κ of its Hessian to reach a fixed
relative tolerance (``engine.train.steps``). MLP-Attn's first layer sees the features
C x̂ whose Gram matrix is G³, so if training a network behaved like that, MLP-Attn would
need κ(G)³ as many steps as 2L-ReLU: a log–log slope three times as large.

Cells: per seed and model, one per prescribed κ(G) of ``trainability.kappas`` on synthetic
data (``engine.data.make_synthetic``: X = U diag(√λ) Vᵀ, n = ``trainability.n`` points of
dimension ``trainability.d``, geometric spectrum; labels ±1 = sign(U z) for a Gaussian z,
so that every eigendirection of G carries the same label energy in expectation), and one on
the run's own data set (``spec.data``). Each trains a fresh network of width
``trainability.width`` with the run's optimiser, lr and batch size and L2
``trainability.l2`` until its epoch-mean training loss is ≤ ``trainability.target`` × the
constant predictor's loss (a stated target, not the settling guard: the guard is relative
to the curve's own history and passes a slow crawl once it is small), or
``trainability.max_steps`` steps (censored).

``kappa_G`` is measured on the rows the models see (unit-norm; centred with
``data.center``) by ``engine.spectral.spectrum`` (numerical-rank κ), not the prescribed
value: the row normalisation moves it. ``kappa_G3`` is κ(G³) measured directly.

The summary fits log(steps) against log κ(G) per model over the uncensored synthetic
points (censored points are excluded and counted: their true steps exceed the cap, so
the fitted slope is a lower bound when any are censored), with a 95% interval, and says
whether MLP-Attn's slope is ≈ 3× 2L-ReLU's: whether 3 × 2L-ReLU's slope lies in MLP-Attn's
interval.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from engine.data.dataset import Dataset
from engine.errors import DivergedError
from engine.experiments.registry import register
from engine.experiments.work import Plan, Work
from engine.models import MODEL_LABELS
from engine.results import constant_loss, loglog_slope
from engine.results.tables import TrainabilityRow
from engine.run.context import batch_seed
from engine.run.events import Event, Log, Summary, TableRow
from engine.run.executors import Cell, run_cells
from engine.train.steps import StepsToTarget

if TYPE_CHECKING:
    from engine.run.context import RunContext

SYNTHETIC = "synthetic-gram"
"""The ``dataset`` of the prescribed-spectrum rows."""


def synthetic_gram(kappa: float, n: int, d: int, seed: int) -> Dataset:
    """n points in R^d whose Gram matrix has the geometric spectrum of ratio ``kappa``
    (before the models' row normalisation), labels sign(U z) (module docstring); the test
    split is empty (only training is measured)."""
    from engine.data import make_synthetic

    s = make_synthetic(n, d, kappa=kappa, seed=seed)
    z = torch.randn(
        s.u.shape[1], generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64
    )
    y = torch.where(s.u.to(torch.float64) @ z >= 0, 1.0, -1.0)
    x = s.x.to(torch.float64)
    unit = x / x.norm(dim=1, keepdim=True).clamp_min(1e-300)
    labels = np.where(y.numpy() > 0, 0, 1).astype(np.int64)
    return Dataset(
        name=SYNTHETIC,
        x_train=unit,
        y_train=y,
        x_test=unit[:0],
        y_test=y[:0],
        x_train_raw=x,
        x_test_raw=x[:0],
        labels_train=labels,
        labels_test=labels[:0],
        classes=(0, 1),
        class_names=("positive", "negative"),
        task="binary",
        image_shape=(d,),
        source=f"make_synthetic(n={n}, d={d}, kappa={kappa:g}, seed={seed})",
    )


def trainability_work(p: Plan) -> Work:
    """An upper bound: every cell trains to ``trainability.max_steps`` steps (a censored
    cell does; the others stop at the target), one network a cell: per model and seed,
    one cell per κ of the synthetic sweep (n × d = ``trainability.n`` × ``.d``) and one
    on the run's data (n_train × its d), 4·b·d·m FLOPs a step of batch b."""
    tr, t = p.spec.trainability, p.spec.train

    def cell(n: int, d: int) -> float:
        b = n if t.optimizer == "gd" else min(t.batch_size, n)
        return 4.0 * b * d * tr.width * tr.max_steps

    flops = len(tr.kappas) * cell(tr.n, tr.d) + cell(p.n, p.d)
    return p.one_at_a_time(flops, float(tr.max_steps * (len(tr.kappas) + 1)))


@register(
    "trainability",
    estimate=trainability_work,
    order=80,
    cells=True,
    in_all=False,
)
def run_trainability(ctx: RunContext) -> Iterator[Event]:
    sp, tr = ctx.spec, ctx.spec.trainability
    name = ctx.dataset().name
    plan: list[Cell] = []
    for seed in sp.seeds:
        for kind in sp.model.kinds:
            lab = MODEL_LABELS[kind]
            for k in tr.kappas:
                plan.append(
                    Cell(
                        f"trainability/{SYNTHETIC}/{kind}/{k:g}/{seed}",
                        synthetic_cell,
                        (kind, float(k), seed),
                        seed,
                        f"trainability {lab} κ={k:g} seed={seed}",
                        batch=((SYNTHETIC, kind), (float(k), seed)),
                    )
                )
            plan.append(
                Cell(
                    f"trainability/{name}/{kind}/{seed}",
                    data_cell,
                    (kind, seed),
                    seed,
                    f"trainability {lab} {name} seed={seed}",
                )
            )
    rows = list(ctx.previous_rows("trainability"))
    for ev in run_cells(ctx, plan):
        if isinstance(ev, TableRow) and ev.table == "trainability":
            rows.append(ev.row)
        yield ev
    summary = summarize(rows)
    for line in summary["headline"]:
        yield Log(line)
    yield Summary("trainability", summary)


def synthetic_cell(
    ctx: RunContext, cell: str, kind: str, kappa: float, seed: int
) -> Iterator[Event]:
    """One prescribed κ(G): its row of ``trainability``. In this process the planned
    points of ``kind`` (every κ and seed: one shape) train side by side in the first
    one's cell (``_measure_together``), each exactly as alone; this cell reads its own."""
    tr = ctx.spec.trainability
    ds = synthetic_gram(kappa, tr.n, tr.d, seed)
    points = tuple(ctx.planned((SYNTHETIC, kind)))
    if (
        (kappa, seed) in points
        and len(points) > 1
        and ctx.spec.train.batch_networks > 1
        and _worth(ctx, kind, ds, seed)
    ):
        got = ctx.memo(
            ("trainability", kind, points), lambda: _measure_together(ctx, kind, points)
        )[(kappa, seed)]
        if isinstance(got, DivergedError):
            raise got
        yield _row(ctx, ds, kind, seed, got, cell)
        return
    yield from _measure(ctx, cell, ds, kind, seed)


def data_cell(ctx: RunContext, cell: str, kind: str, seed: int) -> Iterator[Event]:
    """The run's own data subset: its row of ``trainability``."""
    yield from _measure(ctx, cell, ctx.dataset(seed=seed), kind, seed)


def _worth(ctx: RunContext, kind: str, ds: Dataset, seed: int) -> bool:
    """Whether the points' steps are large enough to train side by side
    (``engine.train.batched.worth_batching``)."""
    from engine.train.batched import worth_batching

    tr, n = ctx.spec.train, ds.n_train
    batch = n if tr.optimizer == "gd" else min(tr.batch_size, n)
    model = ctx.new_model(kind, ctx.spec.trainability.width, seed, ds)
    return worth_batching(model, batch, tr)


def _measure(ctx: RunContext, cell: str, ds: Dataset, kind: str, seed: int) -> Iterator[Event]:
    from engine.train.steps import steps_to_target

    tr = ctx.spec.trainability
    model = ctx.new_model(kind, tr.width, seed, ds)
    x, y = ctx.to_device(ds.x_train_raw), ctx.to_device(ds.y_train)
    got = steps_to_target(
        model,
        x,
        y,
        _cfg(ctx),
        target=tr.target * constant_loss(ds.y_train),
        max_steps=tr.max_steps,
        generator=torch.Generator().manual_seed(batch_seed(seed, tr.width)),
        should_stop=ctx.cancelled,
    )
    yield _row(ctx, ds, kind, seed, got, cell)


def _cfg(ctx: RunContext) -> Any:
    """The run's optimiser, lr and batch with trainability's L2 (its cap set per call)."""
    import dataclasses

    return dataclasses.replace(ctx.spec.train, l2=ctx.spec.trainability.l2, until="fixed")


def _measure_together(
    ctx: RunContext, kind: str, points: tuple[tuple[float, int], ...]
) -> dict[tuple[float, int], StepsToTarget | DivergedError]:
    """``steps_to_target`` of every (κ, seed) of ``points`` in one batched call."""
    from engine.train.steps import steps_to_target_batched

    tr = ctx.spec.trainability
    sets = [synthetic_gram(k, tr.n, tr.d, s) for k, s in points]
    got = steps_to_target_batched(
        [ctx.new_model(kind, tr.width, s, ds) for (_, s), ds in zip(points, sets)],
        torch.stack([ctx.to_device(ds.x_train_raw) for ds in sets]),
        torch.stack([ctx.to_device(ds.y_train) for ds in sets]),
        _cfg(ctx),
        targets=[tr.target * constant_loss(ds.y_train) for ds in sets],
        max_steps=tr.max_steps,
        generators=[torch.Generator().manual_seed(batch_seed(s, tr.width)) for _, s in points],
        should_stop=ctx.cancelled,
        batch_networks=ctx.spec.train.batch_networks,
    )
    return dict(zip(points, got))


def _row(
    ctx: RunContext, ds: Dataset, kind: str, seed: int, got: StepsToTarget, cell: str
) -> TableRow:
    """The ``trainability`` row of one trained point."""
    from engine.spectral import spectrum

    spec = spectrum(ds.x_train)
    row = TrainabilityRow(
        dataset=ds.name,
        kappa_G=spec.kappa_G,
        kappa_G3=spec.kappa_G3_direct,
        model=MODEL_LABELS[kind],
        seed=seed,
        steps_to_converge=got.steps,
        censored=got.censored,
        final_loss=got.final_loss,
    )
    return TableRow.of(row, cell=cell)


def summarize(rows: list[dict]) -> dict:
    """The ``trainability`` section of summary.json: per model the slope of log(steps) on
    log κ(G) over the uncensored synthetic rows (95% interval), the censored count, the
    run's own data set's steps, and whether MLP-Attn's slope is ≈ 3× 2L-ReLU's."""
    typed = [TrainabilityRow.from_row(r) for r in rows]
    slopes: dict[str, dict] = {}
    headline = []
    for m in dict.fromkeys(r.model for r in typed):
        syn = [r for r in typed if r.model == m and r.dataset == SYNTHETIC]
        ok = [r for r in syn if r.censored is False and (r.steps_to_converge or 0) > 0]
        s = loglog_slope([r.kappa_G for r in ok], [float(r.steps_to_converge or 0) for r in ok])
        cens = sum(r.censored is True for r in syn)
        slopes[m] = {"slope": s.slope, "lo": s.lo, "hi": s.hi, "n": s.n, "censored": cens}
        line = (
            f"{m}: log(steps) vs log κ(G) slope {s.slope:.2f} [95% {s.lo:.2f}, {s.hi:.2f}] "
            f"over {s.n} synthetic points"
        )
        if cens:
            line += f"; {cens} censored at the cap, excluded (the slope is then a lower bound)"
        real = [r for r in typed if r.model == m and r.dataset != SYNTHETIC]
        for ds in dict.fromkeys(r.dataset for r in real):  # one clause a data set, all seeds
            mine = [r for r in real if r.dataset == ds]
            steps = sorted(int(r.steps_to_converge or 0) for r in mine)
            more = "≥ " if any(r.censored for r in mine) else ""
            span = f"{steps[0]}" if steps[0] == steps[-1] else f"{steps[0]}–{steps[-1]}"
            line += f"; {ds} (κ {mine[0].kappa_G:.3g}): {more}{span} steps"
            line += f" over {len(mine)} seeds" if len(mine) > 1 else ""
        headline.append(line)
    verdict = _verdict(slopes)
    if verdict:
        headline.append(verdict)
    return {"headline": headline, "slopes": slopes, "three_times": verdict}


def _verdict(slopes: dict[str, dict]) -> str:
    a, r = slopes.get("MLP-Attn"), slopes.get("2L-ReLU")
    if not a or not r or not np.isfinite(a["slope"]) or not np.isfinite(r["slope"]):
        return ""
    want = 3 * r["slope"]
    # an exact fit has a zero-width interval: compare to rounding, not to the last bit
    tol = 1e-9 * max(1.0, abs(want))
    inside = a["lo"] - tol <= want <= a["hi"] + tol
    ratio = a["slope"] / r["slope"] if r["slope"] else float("nan")
    cens = " (censored points excluded: a lower bound)" if a["censored"] else ""
    return (
        f"MLP-Attn's slope is {ratio:.2f}× 2L-ReLU's{cens}: 3× ({want:.2f}) is "
        f"{'inside' if inside else 'outside'} its 95% interval"
    )
