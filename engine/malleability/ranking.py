"""Which training points count as "most influential", and what a flip of them is.

The paper leaves the ranking unstated (docs/protocol.md#evidence). With I [n_test, n_train] the
influences (positive = helpful) and s_i = mean_t I[t, i] the one scalar per training point:

- ``abs_signed_mean`` (default, ours): rank by |s_i|; flip = sign(s_i) changed. Ranking and
  flip use the same aggregate.
- ``abs_mean``: rank by mean_t |I[t, i]|; flip = sign(s_i) changed (two aggregates: a point
  can rank high while s_i ≈ 0, so its sign is fragile).
- ``signed_mean``: rank by s_i (most helpful first); flip = sign(s_i) changed.
- ``per_test``: for each test point t the top ``top_frac`` of training points by |I[t, i]|;
  flips are counted per (t, i) pair, sign(I[t, i]) changed. The intervention perturbs the
  union of the selected points; the companion score is mean_t |I[t, i]|.

Top sets: ``round(top_frac · n)`` points, at least one, stable sort (ties go to the lower
index, so the selection is deterministic). "Helpful" = positive before the intervention.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.errors import ConfigError
from engine.kinds import RANKINGS


def check_ranking(ranking: str, field: str = "flip.ranking") -> None:
    if ranking not in RANKINGS:
        raise ConfigError(field, ranking, f"one of {', '.join(RANKINGS)}")


def top_count(n: int, top_frac: float) -> int:
    """round(top_frac · n), clipped to [1, n]."""
    return min(n, max(1, int(round(top_frac * n))))


def top_indices(score: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the k largest entries of score [n], best first, ties to the lower index."""
    return torch.sort(score, descending=True, stable=True).indices[:k]


def ranking_score(infl: torch.Tensor, ranking: str) -> torch.Tensor:
    """The per-point score [n_train] the ranking sorts by (per_test: mean_t |I|)."""
    if ranking == "abs_signed_mean":
        return infl.mean(0).abs()
    if ranking == "signed_mean":
        return infl.mean(0)
    return infl.abs().mean(0)


@dataclass(frozen=True)
class Selection:
    """The selected set of one ranking: the points to perturb and the units that can flip."""

    ranking: str
    points: torch.Tensor
    """[k] int64 training indices, best first (per_test: the union, ascending)."""
    pairs: torch.Tensor | None
    """per_test: [n_test · k, 2] (test, train) index pairs; else None."""

    @property
    def n_units(self) -> int:
        """Points (or (t, i) pairs) whose flips are counted: the flip rate's denominator."""
        return int(self.pairs.shape[0]) if self.pairs is not None else int(self.points.numel())


def select(infl: torch.Tensor, ranking: str, top_frac: float) -> Selection:
    """The top ``top_frac`` of the training points for ``ranking`` (module docstring).

    infl [n_test, n_train] → ``Selection``.
    """
    check_ranking(ranking)
    t, n = infl.shape
    k = top_count(n, top_frac)
    if ranking != "per_test":
        return Selection(ranking, top_indices(ranking_score(infl, ranking), k), None)
    top = torch.sort(infl.abs(), dim=1, descending=True, stable=True).indices[:, :k]  # [t, k]
    rows = torch.arange(t, device=infl.device)[:, None].expand(t, k)
    pairs = torch.stack([rows.reshape(-1), top.reshape(-1)], dim=1)
    return Selection(ranking, torch.unique(top.reshape(-1)), pairs)


@dataclass(frozen=True)
class FlipCount:
    """Integer flip counts of one selection (helpful = positive before)."""

    n_units: int
    n_flipped: int
    n_helpful: int
    flipped_helpful: int
    flipped_harmful: int


def _signed(infl: torch.Tensor, sel: Selection) -> torch.Tensor:
    """The signed quantity whose sign can flip, per unit: s_i or I[t, i]."""
    if sel.pairs is not None:
        return infl[sel.pairs[:, 0], sel.pairs[:, 1]]
    return infl.mean(0)[sel.points]


def count_flips(before: torch.Tensor, after: torch.Tensor, sel: Selection) -> FlipCount:
    """Flips of the selected units between influences before and after [n_test, n_train]
    (the same training indexing; removed points are not selected units)."""
    b, a = _signed(before, sel), _signed(after, sel)
    flipped = torch.sign(a) != torch.sign(b)
    helpful = b > 0
    return FlipCount(
        n_units=int(b.numel()),
        n_flipped=int(flipped.sum()),
        n_helpful=int(helpful.sum()),
        flipped_helpful=int((flipped & helpful).sum()),
        flipped_harmful=int((flipped & ~helpful).sum()),
    )
