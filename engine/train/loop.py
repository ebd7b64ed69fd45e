"""Training loops that yield one event per epoch (PAPER.md §3).

Binary tasks (float ±1 targets, one output) use MSE; multi-class tasks (integer
labels, K outputs) use cross-entropy. The L2 penalty is (λ/2)‖θ‖² over the trainable
parameters, i.e. gradient λθ, the same as coupled weight decay λ.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from engine.errors import Cancelled, ConfigError, DivergedError
from engine.train import fused


class TrainSpec(Protocol):
    """What the loop reads of a training configuration (``engine.run.spec.TrainSpec``
    provides it; the numeric packages never import the experiment layer)."""

    @property
    def optimizer(self) -> str: ...
    @property
    def lr(self) -> float: ...
    @property
    def epochs(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def l2(self) -> float: ...


Perturb = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]

# Finite divergence: an epoch's mean loss above this many times the first batch's loss
# (floored at 1: the ±1-target MSE and the cross-entropy of a small init start near 1 and
# log K) is a blow-up even while it stays finite, e.g. --lr 1e6 reaches ~1e6.
DIVERGE_FACTOR = 100.0


@dataclass(frozen=True)
class EpochStats:
    """One finished epoch: mean mini-batch data loss, running accuracy, seconds since start."""

    epoch: int
    loss: float
    accuracy: float
    elapsed: float


def is_classification(y: torch.Tensor) -> bool:
    """Integer labels → cross-entropy; float ±1 targets → MSE."""
    return not torch.is_floating_point(y)


def data_loss(out: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Training loss of outputs ``out`` [n, K] against ``y`` ([n] labels or [n] ±1 targets)."""
    if is_classification(y):
        return nn.functional.cross_entropy(out, y, reduction=reduction)
    if out.shape[-1] != 1:
        raise ConfigError("targets", "float", "integer labels for a multi-output model")
    err = (out[:, 0] - y) ** 2
    return err.mean() if reduction == "mean" else err if reduction == "none" else err.sum()


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


def make_optimizer(params: list[torch.Tensor], cfg: TrainSpec) -> torch.optim.Optimizer:
    """Adam or SGD with the L2 penalty as coupled weight decay: the gradient of
    (λ/2)‖θ‖² is λθ, which ``weight_decay=λ`` adds to every gradient (the same update as
    differentiating the penalty, without its autograd graph). Adam uses the fused kernel
    where this torch has it (a step of a 1024 × 3072 layer: 37 ms instead of 62 ms on 2
    cores, ``benchmarks/bench_train.py``). ``engine.train.batched`` steps stacked [B, ...]
    tensors with it: the update is element-wise, so each network's slice gets its own."""
    if cfg.optimizer == "adam":
        dev = params[0].device.type if params else "cpu"
        if dev in ("cpu", "cuda") and all(
            p.dtype in (torch.float32, torch.float64) for p in params
        ):
            try:
                return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.l2, fused=True)
            except (RuntimeError, TypeError):  # torch < 2.4 on CPU: no fused Adam there
                pass
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.l2)
    return torch.optim.SGD(params, lr=cfg.lr, weight_decay=cfg.l2)


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
) -> Iterator[EpochStats]:
    """Train ``model`` in place on x [n, d], y [n]; yields ``EpochStats`` after each epoch.

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
    float rounding, the model updated once an epoch instead of every step.

    A step below ``SMALL_STEP_MACS`` multiply-adds runs on one CPU thread
    (``step_threads``); the thread count is restored when the loop ends.
    """
    n = x.shape[0]
    if exclude is not None and not (0 <= exclude < n):
        raise ConfigError(
            "exclude", exclude, f"an index in 0..{n - 1} (the training set has {n} points)"
        )
    if perturb is None and fused.engine_of(cfg) == "fused" and fused.plan(model) is not None:
        # the closed-form step, through the stacked trainer's bookkeeping (B = 1); imported
        # here because ``engine.train.batched`` builds on this module
        from engine.train.batched import train_one

        yield from train_one(
            model, x, y, cfg, generator=generator, should_stop=should_stop, exclude=exclude
        )
        return
    bs = n if cfg.optimizer == "gd" else min(cfg.batch_size, n)
    with step_threads(model, bs, x.device):
        yield from _epochs(model, x, y, cfg, bs, generator, perturb, should_stop, exclude)


SMALL_STEP_MACS = 1 << 23
"""Steps under this many multiply-adds (batch × trainable parameters, about 8 M) train on
one CPU thread. Measured on 2 cores (``benchmarks/bench_step_threads.py``), a 12-cell
digits sweep (widths 16–256, 200 epochs): 4.2–4.8 s with the rule against 4.7–5.0 s on
torch's 2 threads idle, 4.4 against 5.3 s at load 2.8, and (the Ray helper's runs) 5.6 /
5.9 against 34.6 / 73.0 s at load 3–4; MNIST cells at m 1024–4096 (100 M+ a step) took
the same on 1 or 2 threads and keep the default. Two threads on small matmuls mostly wait for each other, longest when another
process holds a core."""


@contextmanager
def step_threads(model: nn.Module, batch: int, device: torch.device) -> Iterator[None]:
    """One torch thread while a CPU model whose step is under ``SMALL_STEP_MACS`` trains."""
    macs = batch * sum(p.numel() for p in model.parameters() if p.requires_grad)
    before = torch.get_num_threads()
    if device.type != "cpu" or before <= 1 or macs >= SMALL_STEP_MACS:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


INIT_EXTREME = 1e3
"""Initial weights beyond this (in absolute value) are the cause a divergence names."""
L2_EXTREME = 1e3
"""L2 weight decay beyond this is the cause a divergence names."""


def divergence_hint(model: nn.Module, cfg: TrainSpec) -> str:
    """What to change when training diverges: an extreme initial scale (``sigma_w``,
    ``qkv.init_std``) or L2 weight decay when those are the cause, else the learning rate."""
    with torch.no_grad():
        big = max((float(p.abs().max()) for p in model.parameters() if p.numel()), default=0.0)
    if not math.isfinite(big) or big > INIT_EXTREME:
        return (
            f"the initial weights are extreme (largest |w| {big:.3g}): lower model.sigma_w "
            "(or qkv.init_std for QKV-Attn)"
        )
    if cfg.l2 > L2_EXTREME:
        return f"the L2 weight decay {cfg.l2:g} (train.l2) is extreme: lower it (paper: 1e-3)"
    return f"try a lower learning rate than {cfg.lr:g} (--lr)"


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
) -> Iterator[EpochStats]:
    """The epochs of ``train`` (arguments checked there)."""
    n = x.shape[0]
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
        mean = total / max(seen, 1)
        limit = DIVERGE_FACTOR * max(start_loss or 0.0, 1.0)
        if mean > limit:
            raise DivergedError(
                f"training diverged at epoch {epoch} (loss {mean:.3g}, over {DIVERGE_FACTOR:g}× its start "
                f"{start_loss:.3g}); {hint}"
            )
        yield EpochStats(epoch, mean, correct / seen, time.perf_counter() - t0)
    model.eval()
