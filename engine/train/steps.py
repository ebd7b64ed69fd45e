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
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import nn

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
    n = x.shape[0]
    full = cfg.optimizer == "gd" or cfg.batch_size >= n
    per_epoch = 1 if full else math.ceil(n / cfg.batch_size)
    epochs = max(1, math.ceil(max_steps / per_epoch)) + 1
    run = dataclasses.replace(cfg, epochs=epochs)
    last = math.nan
    for st in train(model, x, y, run, generator=generator, should_stop=should_stop):
        last = st.loss
        # full batch: the loss read at epoch e is after e − 1 steps; mini-batches: the
        # epoch's mean over its steps, counted as all b of them taken
        taken = st.epoch - 1 if full else st.epoch * per_epoch
        if last <= target:
            return StepsToTarget(taken, False, last)
        if taken >= max_steps:
            break
    return StepsToTarget(max_steps, True, last)
