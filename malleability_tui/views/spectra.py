"""What the Spectra panel plots: λ(G) in full, λ(G³) down to the numerical rank (pure).

Beyond G's numerical rank its eigenvalues are rounding noise (~1e-16 of the largest); cubed
they fall 30 more decades and would set the plot's scale with numbers that mean nothing.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from engine.results import num


class SpectraView(NamedTuple):
    """Index and eigenvalues per curve; ``rank`` where λ(G³) is cut (None: not known)."""

    idx: list[int]
    eig_g: list[float]
    eig_g3: list[float]
    rank: int | None


def spectrum_rank(rows: list[dict[str, Any]], dataset: str = "") -> int | None:
    """The numerical rank of ``dataset``'s row in spectrum.csv (the first row when ""),
    None when the run has none."""
    for row in rows:
        if not dataset or str(row.get("dataset", "")) == dataset:
            r = num(row.get("rank"))
            return int(r) if math.isfinite(r) and r > 0 else None
    return None


def spectra_view(eig_g: list[float], eig_g3: list[float], rank: int | None) -> SpectraView:
    """λ(G) as measured; λ(G³) only for the indices 1..rank (all when the rank is unknown)."""
    idx = list(range(1, len(eig_g) + 1))
    cut = len(eig_g3) if rank is None else min(rank, len(eig_g3))
    return SpectraView(idx, list(eig_g), list(eig_g3[:cut]), rank)
