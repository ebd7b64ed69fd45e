"""What the Spectra panel plots for a ``trainability`` run (pure): steps to the target
loss against κ(G), log–log, per model; censored points (the cap reached first) apart,
since they are lower bounds and the slope leaves them out (``engine.experiments.
trainability.summarize``)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from engine.results.tables import TrainabilityRow


class Points(NamedTuple):
    """One model's points: κ(G) and steps, measured (``censored`` False) or capped (True)."""

    model: str
    censored: bool
    kappa: list[float]
    steps: list[float]


def trainability_points(rows: list[dict[str, Any]], dataset: str) -> list[Points]:
    """Per model (in row order), its measured then its censored points on ``dataset``'s rows
    (the synthetic Gram sweep); groups without a point are left out."""
    typed = [TrainabilityRow.from_row(r) for r in rows]
    out = []
    for model in dict.fromkeys(r.model for r in typed):
        for censored in (False, True):
            sel = [
                r
                for r in typed
                if r.model == model
                and r.dataset == dataset
                and bool(r.censored) is censored
                and math.isfinite(r.kappa_G)
                and (r.steps_to_converge or 0) > 0
            ]
            if sel:
                out.append(
                    Points(
                        model,
                        censored,
                        [r.kappa_G for r in sel],
                        [float(r.steps_to_converge or 0) for r in sel],
                    )
                )
    return out
