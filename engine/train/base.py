"""What both trainers share (``engine.train.loop`` for one network, ``engine.train.batched``
for many): the configuration they read, the loss, the optimiser, the epoch record, the
divergence guard and the one-thread rule for small steps (docs/protocol.md#training).

Binary tasks (float ±1 targets, one output) use MSE; multi-class tasks (integer
labels, K outputs) use cross-entropy. The L2 penalty is (λ/2)‖θ‖² over the trainable
parameters, i.e. gradient λθ, the same as coupled weight decay λ.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from engine.device import torch_threads
from engine.errors import ConfigError

Perturb = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]
"""``engine.train.adversarial``'s perturb(model, xb [b, d], yb [b]) → xb_adv [b, d]."""


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


@dataclass(frozen=True)
class BatchTick(EpochStats):
    """An epoch still running (``train(..., tick=…)``): ``batch`` of its ``batches`` steps
    done, the loss and accuracy its steps so far averaged (docs/architecture.md)."""

    batch: int = 0
    batches: int = 0


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
    if device.type != "cpu" or macs >= SMALL_STEP_MACS:
        yield
        return
    with torch_threads(1):
        yield


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
