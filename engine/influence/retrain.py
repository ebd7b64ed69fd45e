"""Ground truth by retraining: what removing a training point really does (``influence_check``).

An influence estimator claims I[t, i] ≈ the change of test point t's loss when training
point i is removed and the model retrained. ``retraining_effects`` measures that change
directly: ``fit(exclude)`` retrains (or refits) without point ``exclude`` (None: on every
point) and returns the per-test losses [t]; the effect of point i is
Δ[t, i] = loss_t(fit(i)) − loss_t(fit(None)), positive = helpful (the sign convention of
``engine.influence``). ``agreement`` compares an estimator with it on the points
retrained, per point i, through the score the flip protocol ranks by, s_i = mean_t I[t, i]:
Spearman ρ between the estimated and true s and the fraction of points whose sign agrees.

For a kernel ridge model, ``fit`` = refitting kernel ridge without the point, and the
kernel LOO formula is exact (``tests/engine/influence/test_retrain.py``: equal to 1e-10),
which proves the harness; for a network, ``fit`` retrains from the same initialisation with
the same batches, the point's weight set to zero (``engine.train.train``, ``exclude``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

import torch

from engine.errors import ConfigError
from engine.results import spearman

Fit = Callable[[int | None], torch.Tensor]
"""exclude index (None: the full training set) → per-test-point losses [t]."""


def retraining_effects(fit: Fit, indices: Sequence[int]) -> Generator[int, None, torch.Tensor]:
    """True effects Δ [t, len(indices)] of removing each point of ``indices``.

    A generator: yields the number of points retrained so far after each one (for progress
    and cancellation), returns Δ; use ``truth = yield from retraining_effects(...)`` or
    ``run_to_end``. ``fit(None)`` is evaluated once, first.
    """
    if not len(indices):
        raise ConfigError("indices", list(indices), "at least one training point to remove")
    base = fit(None).to(torch.float64)
    cols = []
    for k, i in enumerate(indices):
        cols.append(fit(int(i)).to(torch.float64) - base)
        yield k + 1
    return torch.stack(cols, dim=1)


def run_to_end(gen: Generator[int, None, torch.Tensor]) -> torch.Tensor:
    """Drain a ``retraining_effects`` generator and return its Δ."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Agreement:
    """How an estimator's per-point scores agree with retraining on the same points."""

    spearman: float
    """Spearman ρ between estimated and true s_i = mean_t (NaN when either is constant)."""
    spearman_p: float
    """Its two-sided p-value."""
    sign_agreement: float
    """Fraction of the points whose estimated and true s_i have the same sign."""
    n_points: int


def point_scores(effects: torch.Tensor) -> torch.Tensor:
    """s_i = mean over test points of an effect or influence matrix [t, k] → [k]."""
    return effects.to(torch.float64).mean(0)


def agreement(estimate: torch.Tensor, truth: torch.Tensor) -> Agreement:
    """Compare an estimator's influences ``estimate`` [t, k] with the true effects ``truth``
    [t, k] on the same k points (columns in the same order)."""
    if estimate.shape != truth.shape:
        raise ConfigError(
            "estimate", tuple(estimate.shape), f"the true effects' shape {tuple(truth.shape)}"
        )
    est, tru = point_scores(estimate).cpu(), point_scores(truth).cpu()
    rho, p = spearman(est.tolist(), tru.tolist())
    sign = (
        float((torch.sign(est) == torch.sign(tru)).double().mean()) if est.numel() else float("nan")
    )
    return Agreement(rho, p, sign, int(est.numel()))
