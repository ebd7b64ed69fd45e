"""Train until converged: when a cell may stop (``train.until = "converged"``).

The rule is the convergence guard itself (``engine.results.guards.convergence``, one
implementation): a cell trains ``epochs`` epochs, then after every ``check_every`` more
the guard reads the epoch losses so far, and the cell stops at the first check where it
holds, or at ``max_epochs``. A run stopped at epoch E has exactly the weights of a
fixed run of E epochs (same seed, same batch order, same optimiser state): the loop is
simply left early.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from engine.results.guards import converged


class UntilSpec(Protocol):
    """What this module reads of ``engine.run.spec.TrainSpec``."""

    @property
    def until(self) -> str: ...
    @property
    def epochs(self) -> int: ...
    @property
    def max_epochs(self) -> int: ...
    @property
    def check_every(self) -> int: ...


def epoch_cap(cfg: UntilSpec) -> int:
    """The most epochs a cell of ``cfg`` runs: ``max_epochs`` (at least ``epochs``) when
    until = converged, else ``epochs``."""
    return max(cfg.max_epochs, cfg.epochs) if cfg.until == "converged" else cfg.epochs


def is_check(cfg: UntilSpec, epoch: int) -> bool:
    """Whether the guard is read after ``epoch`` (1-based): ``epochs``, then every
    ``check_every`` epochs after it."""
    return epoch >= cfg.epochs and (epoch - cfg.epochs) % cfg.check_every == 0


def stop_now(cfg: UntilSpec, losses: Sequence[float], baseline: float | None) -> bool:
    """True when a cell of ``cfg`` whose epoch-mean losses so far are ``losses`` [E] stops
    here: always at the cap; under until = converged also at a check where the guard
    holds (``baseline``: the constant predictor's loss, as the guard takes it)."""
    e = len(losses)
    if e >= epoch_cap(cfg):
        return True
    if cfg.until != "converged" or not is_check(cfg, e):
        return False
    return converged(losses, baseline=baseline)
