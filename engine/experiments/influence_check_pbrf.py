"""``influence_check``'s PBRF truth for one cell, and the points it may be judged on
(docs/protocol.md#influence).

The PBRF is solved for every removed point, but a point whose solve missed
``influence_check.pbrf_tol`` (``PBRFResult.point_converged``: the truth's, or its noise
floor's, twice the steps) is not the PBRF: it never enters a statistic. ``PBRFTruth.keep``
marks the points that may; the others are listed with their reason on every row
(``dropped``, ``n_dropped``) and in the summary. A seed's PBRF truth is judged only when
at least ``pbrf_min_points`` of its points converged (all of them, when fewer are removed).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from engine.malleability.check import pbrf_truth
from engine.models import MODEL_LABELS
from engine.run.events import Event, Log, Progress

if TYPE_CHECKING:
    from engine.data.dataset import Dataset
    from engine.influence.pbrf import PBRFResult
    from engine.run.context import RunContext, TrainedModel


@dataclass(frozen=True)
class PBRFTruth:
    """One cell's PBRF truth: effects [t, k] (the truth, then its floor with the noise
    floor), which of the k points may be judged, and why the others may not."""

    effects: list[torch.Tensor]
    seconds: float
    keep: torch.Tensor
    """[k] bool: the truth's solve (and its floor's) met ``pbrf_tol`` at that point."""
    reasons: list[str]
    """[k] "" for a kept point, else why it was dropped."""
    need: int
    """Converged points needed for the seed to be judged (``pbrf_min_points``, at most k)."""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def enough(self) -> bool:
        """At least ``need`` points converged: the seed's statistics are results."""
        return int(self.keep.sum()) >= self.need

    def dropped(self, indices: list[int]) -> str:
        """The dropped points as "training index: reason" joined by "; " ("" if none)."""
        return "; ".join(f"{i}: {r}" for i, r in zip(indices, self.reasons) if r)


def judged_columns(keep: torch.Tensor, *effects: torch.Tensor) -> list[torch.Tensor]:
    """Each [t, k] matrix restricted to the kept columns [t, keep.sum()] (the only points a
    PBRF statistic may see)."""
    cols = keep.nonzero().reshape(-1).to(effects[0].device)
    return [e.index_select(1, cols) for e in effects]


def combine(runs: list[PBRFResult]) -> tuple[torch.Tensor, list[str]]:
    """(keep [k], reasons [k]) from the truth's solve and its floor's: a point is kept when
    both met the tolerance; the reason names which missed it."""
    keep = runs[0].point_converged.clone()
    reasons = list(runs[0].reasons())
    if len(runs) > 1:
        keep &= runs[1].point_converged
        for j, why in enumerate(runs[1].reasons()):
            if why and not reasons[j]:
                reasons[j] = f"floor (twice the steps): {why}"
    return keep.cpu(), reasons


def pbrf_cell_truth(
    ctx: RunContext, tm: TrainedModel, ds: Dataset, indices: list[int], cell: str
) -> Generator[Event, None, PBRFTruth]:
    """The PBRF truth [t, k] (``engine.malleability.check.pbrf_truth``: L-BFGS,
    ``pbrf_steps``, C fixed, then for 2L-ReLU and MLP-Attn the active set) and, with the
    noise floor, the same after twice the steps: one solve of twice the steps, the truth
    its checkpoint at ``pbrf_steps`` (the same numbers as a solve of its own); their
    seconds, per-point convergence and the points that may be judged. Too few converged
    points is said (a warning) and marked on the rows (``truth_converged``): the summary
    then never calls the seed resolved."""
    sp, ic = ctx.spec, ctx.spec.influence_check
    steps = ic.pbrf_steps
    ctx.check_cancel()
    yield Progress("cell", 0, 1, f"PBRF ({steps} steps) for {len(indices)} points", cell=cell)
    res, secs = pbrf_truth(
        tm.model,
        ds,
        indices,
        l2=sp.train.l2,
        transductive=sp.data.transductive,
        solver="lbfgs",
        max_steps=2 * steps if ic.noise_floor else steps,
        tol=ic.pbrf_tol,
        checkpoint=steps if ic.noise_floor else None,
    )
    runs = [res] if res.early is None else [res.early, res]
    keep, reasons = combine(runs)
    out = PBRFTruth(
        [r.effects for r in runs], secs, keep, reasons, min(ic.pbrf_min_points, len(indices))
    )
    n_kept = int(keep.sum())
    info = out.info
    info.update(
        seconds=secs,
        converged=out.enough,
        converged_points=n_kept,
        points=len(indices),
        min_points=out.need,
        kept=keep.tolist(),
        dropped=out.dropped(indices),
    )
    for budget, r in zip((steps, 2 * steps), runs):
        ok = r.point_converged
        worst = float(r.grad_norm[ok].max()) if bool(ok.any()) else float("nan")
        info[f"{budget}_steps"] = {
            "grad_norm": float(r.grad_norm.max()),
            "grad_norm_converged": worst,
            "converged_points": int(ok.sum()),
            "steps": r.steps,
        }
    label = MODEL_LABELS[tm.kind]
    if n_kept < len(indices):
        yield Log(
            f"{label}: the PBRF converged on {n_kept}/{len(indices)} points (tolerance "
            f"{ic.pbrf_tol:g}; for 2L-ReLU and MLP-Attn: L-BFGS steps, then the active set "
            "over the ReLU kinks, whose generalised gradient is the norm); the others are "
            f"left out of every statistic: {out.dropped(indices)}",
            "warning" if out.enough else "info",
        )
    if not out.enough:
        yield Log(
            f"{label}: the PBRF did not converge on enough points ({n_kept} of "
            f"{len(indices)} met tolerance {ic.pbrf_tol:g} in {steps} steps, {out.need} "
            "needed: influence_check.pbrf_min_points), so it is not claimed resolved",
            "warning",
        )
    return out
