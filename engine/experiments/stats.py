"""Summary statistics shared by the experiments, the reproduction and the front ends."""

from __future__ import annotations

import math
from collections.abc import Iterable


def mean_std(vals: Iterable[float]) -> tuple[float, float, int]:
    """Mean, sample std (0 for one value) and count of the finite values (NaN, NaN, 0 if none)."""
    v = [float(x) for x in vals if x is not None and math.isfinite(float(x))]
    if not v:
        return float("nan"), float("nan"), 0
    m = sum(v) / len(v)
    s = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return m, s, len(v)
