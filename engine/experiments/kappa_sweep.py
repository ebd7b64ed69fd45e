"""Experiment ``kappa_sweep``: claims 1 and 3 against κ(G), with centring as a knob
(docs/protocol.md#kappa-sweep).

For each centring fraction α of ``kappa.fractions`` the run's spec is narrowed to one
point (``point_spec``: ``data.center_fraction`` α, the ``kappa.*`` sizes, one attack at
one width) and run in its own ``RunContext``, so each point has its own data, trained
models and linearized twins, by the same cells as ``ntk`` (``ntk_cell``) and ``flip``
(``flip_cell``) and the same trainer. Their rows come back tagged with α (tables
``kappa_ntk``, ``kappa_flips``), their cell ids prefixed ``kappa/<α>/`` (resume); κ(G),
κ_d(G), κ(G)³ and κ(G³) are measured at each α on the first seed's subset
(``engine.spectral.spectrum``). The points and the fits against log κ(G) are
``engine.results.kappa`` (table ``kappa_sweep``, the summary).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from engine.errors import ConfigError
from engine.experiments.flip import flip_cell, flip_cell_id
from engine.experiments.ntk import ntk_cell
from engine.experiments.registry import register
from engine.experiments.work import Plan, Work
from engine.models import MODEL_LABELS
from engine.results import MARK
from engine.results import kappa as kr
from engine.results.tables import KappaFlipRow, KappaNtkRow
from engine.run.events import (
    Artifact,
    CellFailed,
    CellFinished,
    Event,
    Log,
    Metric,
    Progress,
    Summary,
    TableRow,
)
from engine.run.executors import Cell, run_cells

if TYPE_CHECKING:
    from engine.run.context import RunContext
    from engine.run.spec import RunSpec

POINTS_CELL = "kappa/points"
"""The cell of the ``kappa_sweep`` table (finished once every point is)."""
KINDS = ("relu", "attn")
"""The models of the sweep: centring is not supported for QKV-Attn."""


def point_spec(spec: RunSpec, alpha: float) -> RunSpec:
    """The run's spec narrowed to the point α: ``data.center_fraction`` α, the ``kappa``
    section's sizes, widths, epochs and its one attack at ``kappa.flip_width``."""
    k = spec.kappa
    kinds = tuple(m for m in spec.model.kinds if m in KINDS)
    if not kinds:
        raise ConfigError("model.kinds", ",".join(spec.model.kinds), "relu and/or attn")
    return spec.replace(
        experiment="ntk,flip",
        data__center=False,
        data__center_fraction=alpha,
        data__n_train=k.n_train,
        data__n_test=k.n_test,
        model__kinds=kinds,
        model__widths=k.widths,
        train__epochs=k.epochs,
        flip__width=k.flip_width,
        flip__attacks=(k.attack,),
        flip__eps=(k.eps,),
        flip__pgd_steps=k.pgd_steps,
        flip__pgd_alpha=None,
        flip__ridges=(),
        flip__rankings=(),
    )


def prefix(alpha: float) -> str:
    """The cell-id prefix of the point α."""
    return f"kappa/{alpha:g}/"


def kappa_sweep_work(p: Plan) -> Work:
    """At each centring fraction, the ``ntk`` and ``flip`` work of that point's spec
    (``point_spec``: its own sizes, one attack), the flip's networks shared with the ntk
    cells as the run shares them; the spectra are seconds."""
    from engine.experiments.estimate import planned_work

    w = Work()
    for alpha in p.spec.kappa.fractions:
        for part in planned_work(point_spec(p.spec, alpha)).values():
            w += part
    return w


@register(
    "kappa_sweep",
    estimate=kappa_sweep_work,
    order=90,
    cells=True,
    in_all=False,
    sizes=lambda sp: (sp.kappa.n_train, sp.kappa.n_test),
)
def run_kappa_sweep(ctx: RunContext) -> Iterator[Event]:
    from engine.run.context import Resume, RunContext
    from engine.spectral.spectrum import spectrum

    spectra: dict[float, dict[str, Any]] = {}
    ntk_rows = [KappaNtkRow.from_row(r) for r in ctx.previous_rows("kappa_ntk")]
    flip_rows = [KappaFlipRow.from_row(r) for r in ctx.previous_rows("kappa_flips")]
    name, failed = ctx.spec.data.name, False
    for alpha in ctx.spec.kappa.fractions:
        sp, pre = point_spec(ctx.spec, alpha), prefix(alpha)
        done = frozenset(c[len(pre) :] for c in ctx.done_cells if c.startswith(pre))
        sub = RunContext(sp, resume=Resume(done, ctx.cancel), executor=ctx.executor)
        ds = sub.dataset(seed=sp.seeds[0])
        name = ds.name
        s = spectrum(ds.x_train, rtol=sp.spectrum.rtol)
        spectra[alpha] = s.row(ds.name)
        yield Log(
            f"α={alpha:g}: κ(G)={s.kappa_G:.4g}, κ_d={s.kappa_d:.4g}, κ(G)³={s.kappa_G_cubed:.4g}, "
            f"κ(G³)={s.kappa_G3_direct:.4g} (rank {s.rank})",
            "info",
        )
        for ev in run_cells(sub, _plan(sub, alpha, pre, ctx)):
            out = _tag(ev, alpha, pre)
            if isinstance(out, TableRow):
                if out.table == KappaNtkRow.TABLE:
                    ntk_rows.append(KappaNtkRow.from_row(out.row))
                else:
                    flip_rows.append(KappaFlipRow.from_row(out.row))
            failed |= isinstance(out, CellFailed)
            if out is not None:
                yield out
        for note in sub.drain_notes():
            ctx.note(f"α={alpha:g}: {note}")
    rows = kr.points(ntk_rows, flip_rows, spectra, name)
    if not ctx.is_done(POINTS_CELL):  # done: a resumed run that finished keeps its rows
        for row in rows:
            yield TableRow.of(row, cell=POINTS_CELL)
        if not failed:
            yield CellFinished(POINTS_CELL)
    summary = kr.summarize(rows, name)
    for line in summary["headline"]:
        yield Log(line, "warning" if MARK in line else "info")
    yield Summary("kappa_sweep", summary)


def _plan(sub: RunContext, alpha: float, pre: str, ctx: RunContext) -> list[Cell]:
    """The point's cells: ``ntk`` cells (kind, width, seed), then a ``flip`` cell per
    (kind, seed) at ``kappa.flip_width`` (its network reused from the ntk cell)."""
    sp, k = sub.spec, sub.spec.kappa
    plan: list[Cell] = []
    name = sub.dataset(seed=sp.seeds[0]).name
    for seed in sp.seeds:
        for kind in sp.model.kinds:
            for width in sp.model.widths:
                label = f"κ α={alpha:g} {MODEL_LABELS[kind]} m={width} seed={seed}"
                cid = f"ntk/{name}/{kind}/{width}/{seed}"
                batch = ((kind, width), seed)
                plan.append(Cell(cid, ntk_cell, (kind, width, seed), seed, label, batch=batch))
    for seed in sp.seeds:
        for kind in sp.model.kinds:
            point = flip_cell_id("flip", name, kind, seed, k.attack, k.eps)
            if ctx.is_done(pre + point):
                continue
            label = f"κ α={alpha:g} flip {MODEL_LABELS[kind]} seed={seed}"
            todo = ((k.attack, k.eps),)
            plan.append(
                Cell(
                    f"flip/{name}/{kind}/{seed}",
                    flip_cell,
                    (kind, seed, "standard", todo),
                    seed,
                    label,
                    batch=((kind, k.flip_width), seed),
                )
            )
    return plan


def _tag(ev: Event, alpha: float, pre: str) -> Event | None:
    """A point's event as the sweep records it: rows tagged with α into its own tables,
    cell ids prefixed; the per-cell artifacts (drift series, flip scores) left out."""
    if isinstance(ev, TableRow):
        if ev.table == "ntk_distance":
            row: Any = KappaNtkRow.from_row({**ev.row, "alpha": alpha})
        elif ev.table == "flip_rates":
            row = KappaFlipRow.from_row({**ev.row, "alpha": alpha})
        else:
            return None
        return TableRow.of(row, cell=pre + ev.cell)
    if isinstance(ev, Artifact):
        return None
    if isinstance(ev, (CellFinished, CellFailed, Metric)) or (isinstance(ev, Progress) and ev.cell):
        return dataclasses.replace(ev, cell=pre + ev.cell)
    return ev
