"""Training loops that yield one event per epoch (docs/protocol.md#training).

Binary tasks (float ±1 targets, one output) use MSE; multi-class tasks (integer
labels, K outputs) use cross-entropy. The L2 penalty is (λ/2)‖θ‖² over the trainable
parameters, i.e. gradient λθ, the same as coupled weight decay λ. The pieces both
trainers share live in ``engine.train.base`` and are re-exported here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator

import torch
from torch import nn

from engine.errors import Cancelled, ConfigError, DivergedError
from engine.train import fused
from engine.train.base import (
    DIVERGE_FACTOR,
    SMALL_STEP_MACS,
    BatchTick,
    EpochStats,
    TrainSpec,
    data_loss,
    divergence_hint,
    is_classification,
    make_optimizer,
    step_threads,
)
from engine.train.batched import Perturb, train_one

__all__ = [
    "DIVERGE_FACTOR",
    "SMALL_STEP_MACS",
    "EpochStats",
    "Perturb",
    "TrainSpec",
    "accuracy",
    "data_loss",
    "divergence_hint",
    "evaluate",
    "is_classification",
    "l2_penalty",
    "make_optimizer",
    "step_threads",
    "train",
]


def accuracy(out: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction correct: argmax for labels, sign for ±1 targets."""
    if out.shape[0] == 0:
        return float("nan")
    if is_classification(y):
        return float((out.argmax(dim=1) == y).double().mean())
    return float((torch.sign(out[:, 0]) == torch.sign(y)).double().mean())


@torch.no_grad()
def evaluate(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 4096
) -> tuple[float, float]:
    """(mean data loss, accuracy) of ``model`` on x [n, d], y [n], in eval mode."""
    was = model.training
    model.eval()
    outs = [model(x[i : i + batch_size]) for i in range(0, x.shape[0], batch_size)]
    model.train(was)
    out = torch.cat(outs) if outs else x.new_zeros((0, 1))
    return float(data_loss(out, y)), accuracy(out, y)


def l2_penalty(model: nn.Module) -> torch.Tensor:
    """Σ over trainable parameters of ‖p‖² (multiply by λ/2)."""
    return sum((p * p).sum() for p in model.parameters() if p.requires_grad)  # type: ignore[return-value]


def _optimizer(model: nn.Module, cfg: TrainSpec) -> torch.optim.Optimizer:
    """``make_optimizer`` over the trainable parameters of ``model``."""
    return make_optimizer([p for p in model.parameters() if p.requires_grad], cfg)


def _fixed_input(
    model: nn.Module, x: torch.Tensor
) -> tuple[torch.Tensor | None, Callable[[torch.Tensor], torch.Tensor] | None]:
    """(features [n, d'], head) when ``model.fixed_features`` is True, else (None, None).

    A model opts in explicitly: ``fixed_features`` (a property) says that ``features(x)``
    uses no trainable parameter, and ``forward_features`` maps features to outputs, so
    ``model(x) == model.forward_features(model.features(x))``. Models whose first-layer
    input is trained (QKV attention) leave the flag off.
    """
    if not getattr(model, "fixed_features", False):
        return None, None
    with torch.no_grad():
        feats = model.features(x).detach()  # type: ignore[operator]
    return feats, model.forward_features  # type: ignore[return-value]


def train(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainSpec,
    *,
    generator: torch.Generator,
    perturb: Perturb | None = None,
    should_stop: Callable[[], bool] | None = None,
    exclude: int | None = None,
    tick: float | None = None,
) -> Iterator[EpochStats]:
    """Train ``model`` in place on x [n, d], y [n]; yields ``EpochStats`` after each epoch.

    ``tick``: also yield a ``BatchTick`` between two steps of an epoch once ``tick``
    seconds passed since the last thing yielded, so that a run's progress moves during a
    long epoch (an adversarial one runs an attack on every batch: minutes at the paper's
    sizes); None (the default): epochs only.

    ``perturb(model, xb, yb)`` (e.g. PGD for adversarial training) replaces each
    mini-batch before the step. ``should_stop()`` is polled every batch; when it
    returns True the loop raises ``Cancelled``. A non-finite loss, or an epoch mean loss
    above ``DIVERGE_FACTOR`` × max(first batch loss, 1), raises ``DivergedError`` naming the
    epoch. Batch order comes from ``generator`` (CPU).

    ``exclude``: train without the point of that index, its weight in the objective set to
    zero and everything else unchanged: the same batches in the same order (the batch that
    holds it keeps its other points and its 1/|batch| normalisation), so the objective is
    (1/n) Σ_{j≠i} ℓ_j + (λ/2)‖θ‖² for full-batch GD, the removal that influence functions
    (ε = −1/n) and kernel LOO at the objective's ridge describe (``influence_check``).

    2L-ReLU, MLP-Attn and their structured linearized twins take the closed-form step
    (``engine.train.fused``) unless ``cfg.engine`` is "autograd"; the same numbers up to
    float rounding, the model updated once an epoch instead of every step (with
    ``perturb``: before every step, so its input gradient reads the current weights, in
    closed form under the fused engine: ``engine.attacks.base.gradient``).

    A step below ``SMALL_STEP_MACS`` multiply-adds runs on one CPU thread
    (``step_threads``); the thread count is restored when the loop ends.
    """
    n = x.shape[0]
    if exclude is not None and not (0 <= exclude < n):
        raise ConfigError(
            "exclude", exclude, f"an index in 0..{n - 1} (the training set has {n} points)"
        )
    if fused.engine_of(cfg) == "fused" and fused.plan(model) is not None:
        # the closed-form step, through the stacked trainer's bookkeeping (B = 1)
        yield from train_one(
            model,
            x,
            y,
            cfg,
            generator=generator,
            should_stop=should_stop,
            exclude=exclude,
            perturb=perturb,
            tick=tick,
        )
        return
    bs = n if cfg.optimizer == "gd" else min(cfg.batch_size, n)
    with step_threads(model, bs, x.device):
        yield from _epochs(model, x, y, cfg, bs, generator, perturb, should_stop, exclude, tick)


def _epochs(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainSpec,
    bs: int,
    generator: torch.Generator,
    perturb: Perturb | None,
    should_stop: Callable[[], bool] | None,
    exclude: int | None,
    tick: float | None = None,
) -> Iterator[EpochStats]:
    """The epochs of ``train`` (arguments checked there)."""
    n = x.shape[0]
    batches = -(-n // bs)
    last = time.perf_counter()
    opt = _optimizer(model, cfg)
    t0 = time.perf_counter()
    model.train()
    start_loss: float | None = None
    hint = divergence_hint(model, cfg)  # the cause to name if the loss blows up
    # The first layer's input computed once (2L-ReLU's x/‖x‖, MLP-Attn's Cx̂/‖Cx̂‖) when the
    # model says it does not depend on trainable parameters and no perturbation changes
    # the inputs; each step then only runs the head. Same numbers, up to float rounding.
    feats, head = _fixed_input(model, x) if perturb is None else (None, None)
    for epoch in range(1, cfg.epochs + 1):
        order = torch.randperm(n, generator=generator).to(x.device)
        total, correct, seen = 0.0, 0.0, 0
        for start in range(0, n, bs):
            if should_stop is not None and should_stop():
                raise Cancelled(f"stopped during epoch {epoch}")
            idx = order[start : start + bs]
            xb, yb = x[idx], y[idx]
            if perturb is not None:
                xb = perturb(model, xb, yb).detach()
                model.train()
            out = head(feats[idx]) if feats is not None and head is not None else model(xb)
            if exclude is not None and bool((idx == exclude).any()):
                keep = idx != exclude
                loss = (data_loss(out, yb, reduction="none") * keep).sum() / idx.numel()
                out, yb, idx = out[keep], yb[keep], idx[keep]  # the epoch statistics skip it
                scale = (keep.numel() / idx.numel()) if idx.numel() else 0.0
            else:
                loss, scale = data_loss(out, yb), 1.0
            opt.zero_grad(set_to_none=True)
            loss.backward()  # + λθ from the optimiser's weight decay (``_optimizer``)
            opt.step()
            lv = float(loss.detach()) * scale  # the mean over the batch's points that count
            if not math.isfinite(lv):
                raise DivergedError(f"training diverged at epoch {epoch} (loss={lv}); {hint}")
            if start_loss is None:
                start_loss = lv
            if idx.numel():
                total += lv * idx.numel()
                with torch.no_grad():
                    correct += accuracy(out.detach(), yb) * idx.numel()
                seen += idx.numel()
            if tick is not None and time.perf_counter() - last >= tick and start + bs < n:
                last = time.perf_counter()
                yield BatchTick(
                    epoch,
                    total / max(seen, 1),
                    correct / max(seen, 1),
                    last - t0,
                    batch=start // bs + 1,
                    batches=batches,
                )
        mean = total / max(seen, 1)
        limit = DIVERGE_FACTOR * max(start_loss or 0.0, 1.0)
        if mean > limit:
            raise DivergedError(
                f"training diverged at epoch {epoch} (loss {mean:.3g}, over {DIVERGE_FACTOR:g}× its start "
                f"{start_loss:.3g}); {hint}"
            )
        last = time.perf_counter()
        yield EpochStats(epoch, mean, correct / seen, last - t0)
    model.eval()
