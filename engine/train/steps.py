"""Steps to a target loss: how long a model takes to train (experiment ``trainability``).

For gradient descent on least squares with a fixed step η ≤ 1/λ_max(H), the residual in
the Hessian's eigendirection k shrinks by (1 − ηλ_k) a step, so reaching a fixed relative
tolerance takes steps ∝ λ_max/λ_min = κ(H) (up to a log factor that does not depend on
κ): a slope of 1 of log(steps) against log κ. On a linear model over the rows of X the
Hessian's non-zero spectrum is G = X Xᵀ's; over the linearized attention's features
G X it is G³'s, so the same method should need κ(G)³ as many steps (slope 3).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch
from torch import nn

from engine.errors import DivergedError
from engine.train.loop import train


class StepsToTarget(NamedTuple):
    """``steps``: optimiser steps taken when the epoch-mean loss first reached the target
    (the cap when ``censored``); ``final_loss``: that epoch's mean loss."""

    steps: int
    censored: bool
    final_loss: float


def steps_to_target(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: Any,
    *,
    target: float,
    max_steps: int,
    generator: torch.Generator,
    should_stop: Callable[[], bool] | None = None,
) -> StepsToTarget:
    """Train ``model`` on x [n, d], y [n] with ``cfg`` (a ``TrainSpec``: optimiser, lr, batch,
    L2; its epochs are replaced by the cap) until an epoch's mean training loss is ≤
    ``target`` or ``max_steps`` optimiser steps have been taken.

    An epoch of b mini-batches counts b steps (full-batch GD: one); its mean loss is that of
    the batches before their steps, so with one batch the epoch-e loss is the loss after
    e − 1 steps and ``steps`` = e − 1 counts the steps it took to get there (0 when the
    initial loss already meets the target).
    """
    run, verdict = _rule(cfg, x.shape[0], max_steps)
    last = math.nan
    for st in train(model, x, y, run, generator=generator, should_stop=should_stop):
        last = st.loss
        got = verdict(st.epoch, last, target)
        if got is not None:
            return got
    return StepsToTarget(max_steps, True, last)


def _rule(
    cfg: Any, n: int, max_steps: int
) -> tuple[Any, Callable[[int, float, float], StepsToTarget | None]]:
    """(cfg with the epoch cap, verdict(epoch, its mean loss, target)): the result once an
    epoch reached the target or the step cap, else None."""
    full = cfg.optimizer == "gd" or cfg.batch_size >= n
    per_epoch = 1 if full else math.ceil(n / cfg.batch_size)
    epochs = max(1, math.ceil(max_steps / per_epoch)) + 1

    def verdict(epoch: int, loss: float, target: float) -> StepsToTarget | None:
        # full batch: the loss read at epoch e is after e − 1 steps; mini-batches: the
        # epoch's mean over its steps, counted as all b of them taken
        taken = epoch - 1 if full else epoch * per_epoch
        if loss <= target:
            return StepsToTarget(taken, False, loss)
        if taken >= max_steps:
            return StepsToTarget(max_steps, True, loss)
        return None

    return dataclasses.replace(cfg, epochs=epochs), verdict


def steps_to_target_batched(
    models: Sequence[nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: Any,
    *,
    targets: Sequence[float],
    max_steps: int,
    generators: Sequence[torch.Generator],
    should_stop: Callable[[], bool] | None = None,
    batch_networks: int | None = None,
) -> list[StepsToTarget | DivergedError]:
    """``steps_to_target`` of every model of ``models`` (same shape), side by side in
    ``engine.train.batched.train_batched``: network b on x[b], y[b] ([B, n, d], [B, n])
    with ``targets[b]`` and ``generators[b]``, each stopped at its own verdict, each
    result the one its separate call returns (a network that diverged: the error its
    separate call raises, returned so that the others' results stand)."""
    from engine.train.batched import BATCH_NETWORKS, train_batched

    run, verdict = _rule(cfg, y.shape[-1], max_steps)
    out: dict[int, StepsToTarget | DivergedError] = {}

    def stop(b: int, losses: Sequence[float]) -> bool:
        got = verdict(len(losses), losses[-1], targets[b])
        if got is not None:
            out[b] = got
        return got is not None

    for ev in train_batched(
        models,
        x,
        y,
        run,
        generators=generators,
        stop=stop,
        should_stop=should_stop,
        batch_networks=batch_networks or BATCH_NETWORKS,
        raise_diverged=False,
    ):
        for b, st in zip(ev.networks, ev.stats):
            if b in ev.diverged:
                out[b] = DivergedError(ev.diverged[b])
            elif b in ev.stopped and b not in out:  # the epoch cap
                out[b] = StepsToTarget(max_steps, True, st.loss)
    return [out[b] for b in range(len(models))]
