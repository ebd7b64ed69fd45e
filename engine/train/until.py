"""Train until converged: when a cell may stop (``train.until = "converged"``).

A cell trains ``epochs`` epochs, then after every ``check_every`` more the rule reads the
epoch losses so far, and the cell stops at the first check where it holds, or at
``max_epochs``. The rule (``may_stop``) is the convergence guard
(``engine.results.guards.convergence``, one implementation) read twice: on its own window
(the last 10 % of the epochs against the 10 % before) and on a window twice as long
(``STOP_WINDOW``: the last 20 % against the 20 % before), each making at most ``TOL``
(1 %) of the total decrease. So a stopped cell has passed the guard its table reports.

Why the second window (``python benchmarks/bench_until_rules.py``, the measurement in
its docstring): on uncentred MNIST MLP-Attn crawls down under batch noise, and the guard
alone held at a noisy early check (epochs 100-140), leaving 4-13 % of the decrease the
1000-epoch cap makes; holding at two or three consecutive checks left 2-14 %. With the
20 % window too it stops at 220-430 and leaves at most 3 %. Cells flat by the first
check (2L-ReLU, centred MNIST and CIFAR-10) stop where the guard alone stopped them (one
centred CIFAR-10 MLP-Attn cell 10 epochs later); cells still settling there pay about
1.5x the epochs (an exponential approach: the guard alone holds at ≈ 4.2 time constants,
with the 20 % window at ≈ 6.2; the quick preset's narrow digits cells: 260-550 -> 430-830).

A cell stuck at its start also stops at a check (``stuck``): the guard says it never
left its initial loss, and on the ``STOP_WINDOW`` windows the loss shows no trend (prev −
last within the guard's noise bound, 2·SE). It stays not converged ("never left its
initial loss"); its rows say ``stuck`` (docs/claims.md#guards). Measured
(``benchmarks/bench_until_rules.py``, its docstring): adversarial training at ε 0.3
(Fashion-MNIST uncentred 2L-ReLU, CIFAR-10 centred MLP-Attn, m 1024) sits at ln 10 and
stops at the first check (200) instead of the cap (1000); none of the 38 other histories
(digits, MNIST at lr 3e-6 to 1e-3, slow-start digits at σ_w 1e-4) stops differently, and
none that later leaves its start is stopped as stuck, even with checks from epoch 10. A trend read against ``MIN_DROP``·ref instead of the noise bound
stopped 9 such cells (uncentred MNIST MLP-Attn at lr 3e-6: 0.8 % down by epoch 100,
steadily, 3 % by 400): the noise bound it is. A crawl slower than the noise over a
20 % window is stopped as stuck; a steady one above the noise is not, however slow.

A run stopped at epoch E has exactly the weights of a fixed run of E epochs (same seed,
same batch order, same optimiser state): the loop is simply left early.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from engine.results.guards import converged, convergence, windows

STOP_WINDOW = 0.2
"""The longer window the stopping rule reads besides the guard's own (``WINDOW``, 0.1)."""
NEVER_LEFT = "never left its initial loss"
"""The guard's reason (``engine.results.guards.convergence``) that ``stuck`` reads."""
CAP, CONVERGED, STUCK = "cap", "converged", "stuck"
"""Why a cell stopped (``stop_reason``): at the epoch cap, settled, or stuck at its start."""


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


def may_stop(losses: Sequence[float], baseline: float | None) -> bool:
    """Whether a cell whose epoch-mean losses so far are ``losses`` [E] may stop: the guard
    holds on its own window and on ``STOP_WINDOW`` (``baseline``: the constant predictor's
    loss, as the guard takes it)."""
    return converged(losses, baseline=baseline) and converged(
        losses, baseline=baseline, window=STOP_WINDOW
    )


def stuck(losses: Sequence[float], baseline: float | None) -> bool:
    """Whether a cell whose epoch-mean losses so far are ``losses`` [E] is stuck at its
    start: the guard says it never left its initial loss, and on ``STOP_WINDOW`` the loss
    shows no trend (prev − last within the guard's noise bound, 2·SE)."""
    if convergence(losses, baseline=baseline).reason != NEVER_LEFT:
        return False
    got = windows(losses, STOP_WINDOW)
    if got is None:
        return False
    prev, last, noise = got
    return prev - last <= noise


def stop_reason(cfg: UntilSpec, losses: Sequence[float], baseline: float | None) -> str:
    """Why a cell of ``cfg`` whose epoch-mean losses so far are ``losses`` [E] stops here,
    '' when it trains on: ``CAP`` at the cap (``epochs`` when until = fixed); under until =
    converged at a check also ``CONVERGED`` where ``may_stop`` holds, else ``STUCK`` where
    ``stuck`` does."""
    e = len(losses)
    if e >= epoch_cap(cfg):
        return CAP
    if cfg.until != "converged" or not is_check(cfg, e):
        return ""
    if may_stop(losses, baseline):
        return CONVERGED
    return STUCK if stuck(losses, baseline) else ""


def stop_now(cfg: UntilSpec, losses: Sequence[float], baseline: float | None) -> bool:
    """True when a cell of ``cfg`` whose epoch-mean losses so far are ``losses`` [E] stops
    here (``stop_reason`` says why)."""
    return bool(stop_reason(cfg, losses, baseline))
