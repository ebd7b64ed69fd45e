"""Many small networks of one shape trained side by side, each exactly as it trains alone.

``train_batched`` stacks the trainable parameters of B same-shaped networks as [B, ...]
tensors and takes every step for all of them at once (``torch.func.vmap`` over
``functional_call``: one batched matmul instead of B small ones), while network b keeps
everything that makes its trajectory its own: its initial weights, its batch order (its
own ``torch.Generator``, drawing the same ``torch.randperm(n)`` per epoch as
``engine.train.train``), its excluded point (zero weight, the batch keeps its 1/|batch|
normalisation), its fixed features (MLP-Attn with C refit without a point), its Adam
moments (or SGD / full-batch GD), its L2, its per-epoch statistics and divergence guard,
and its stop: a stopped network no longer updates while the others go on. In float64 every
network's weights and epoch losses equal the separate run's to ~1e-12
(``tests/engine/train/test_batched.py``). In float32 a batched matmul may round differently
from a single one; on this project's 2-core CPU the influence_check rows and true effects
came out bitwise equal to the separate trainer's (``benchmarks/bench_batched.py``).

2L-ReLU, MLP-Attn and their structured linearized twins take the closed-form step of
``engine.train.fused`` (``train.engine = "fused"``, the default): no autograd, batched
matmuls over the stacked weights, the optimiser's kernel called directly; the rest
(batch orders, exclusions, statistics, stops, divergence, write-back: one chunk's state,
``engine.train.chunk``) is the same for every step. Under ``train.engine = "autograd"`` models whose ``fixed_features``
is True take the fast vmap path (features computed once per network, each step runs
only ``forward_features`` over ``model.head``); any other module (QKV-Attn, a jvp twin)
the generic path, ``functional_call`` of the whole module on its raw inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

from engine.errors import ConfigError, DivergedError
from engine.train import fused
from engine.train.base import (
    SMALL_STEP_MACS,
    EpochStats,
    TrainSpec,
    step_threads,
)
from engine.train.chunk import BatchedEpoch, Chunk, Perturb, StopRule

BATCH_NETWORKS = 64
"""The most networks trained in one chunk by default (``train.batch_networks``). Measured on
2 cores under load 7–12 from other jobs (``benchmarks/bench_batched.py --parts chunks``: 64
networks of influence_check's shape, n 200, width 256): chunks of 8 to 64 took 11–17 ms a
network-epoch, indistinguishable within that load's noise; 64 keeps one influence_check
cell (2 × 41 networks) to two even chunks at about 5 MB a network (weights, gradient, Adam
moments, features), far under ``MEMORY_BUDGET``."""

MEMORY_BUDGET = 1 << 30
"""Bytes one chunk may hold (parameters, gradients, Adam moments, per-network features and
activations, float estimate): a chunk is cut below ``batch_networks`` to stay under it."""

MIN_STEP_MACS = SMALL_STEP_MACS
"""On an accelerator, a few networks (a sweep's seeds, their twins, trainability's points)
train side by side when one network's step is at least this many multiply-adds (batch ×
trainable parameters, ``worth_batching``). Not measured (no GPU was lent): batching there
divides the kernel launches a step costs."""
CPU_MIN_STEP_MACS = math.inf
"""The same threshold on a CPU: never, by measurement on this project's 2-core CPU. A
batched step costs 2.2–3.2 separate ones whatever B (``bench_batched.py --parts
overhead``), so small steps lose, the more so as networks stop at their own epochs and B
shrinks: the quick digits ntk sweep over 3 seeds (``--parts ntk``, every step under 8 M)
took 205 s CPU batched against 166 s separate (load 7–9); and large ones gain nothing: 3
networks of MNIST n 500 took 1.01, 0.99, 0.93, 0.91× the separate speed at m 64, 256,
1024, 4096 (``--parts flops --networks 3 --repeat 3``, load 2). influence_check's 82
networks a cell do not ask (1.49× faster batched, docs/benchmarks.md#batched)."""


def worth_batching(model: nn.Module, batch: int, cfg: Any = None) -> bool:
    """Whether networks like ``model`` should train stacked: always when ``cfg`` (a
    ``TrainSpec``; None: the default engine) gives it the fused step (a stacked fused step
    costs about one separate one: at m ≤ 256 and batch 32, B = 3 ran 3.3–6.0× and B = 6
    4.9–9.6× faster a network than autograd, ``benchmarks/bench_fused_step.py``,
    docs/benchmarks-training.md); else when a step of
    ``model`` on ``batch`` points reaches ``MIN_STEP_MACS`` on an accelerator,
    ``CPU_MIN_STEP_MACS`` on a CPU."""
    if fused.engine_of(cfg) == "fused" and fused.plan(model) is not None:
        return True
    params = [p for p in model.parameters() if p.requires_grad]
    cpu = not params or params[0].device.type == "cpu"
    macs = batch * sum(p.numel() for p in params)
    return macs >= (CPU_MIN_STEP_MACS if cpu else MIN_STEP_MACS)


def _class(model: nn.Module) -> tuple[type, type]:
    """A network's class (a linearized twin's: with its network's)."""
    return type(model), type(getattr(model, "base", None))


def stackable(models: Sequence[nn.Module], cfg: Any = None) -> bool:
    """Whether ``models`` can share one stacked step: networks of one class and parameter
    shapes; or, on the fused step (``cfg``: as ``worth_batching``), closed-form networks
    whose fused plans agree (``engine.train.fused.FusedPlan``: the same trained roles,
    twin or not, width and outputs) and trained shapes, whatever their feature map:
    2L-ReLU and MLP-Attn of one width, or their twins, each through its own features."""
    shapes = [[tuple(p.shape) for p in m.parameters()] for m in models]
    if len({_class(m) for m in models}) == 1:
        return all(s == shapes[0] for s in shapes)
    if fused.engine_of(cfg) != "fused":
        return False
    trained = [[tuple(p.shape) for p in m.parameters() if p.requires_grad] for m in models]
    plans = [fused.plan(m) for m in models]
    sigs = {
        None if p is None else (tuple(sorted(p.roles.items())), p.linear, p.width, p.n_out)
        for p in plans
    }
    return None not in sigs and len(sigs) == 1 and all(t == trained[0] for t in trained)


def chunk_size(models: Sequence[nn.Module], n: int, bs: int, batch_networks: int) -> int:
    """Networks per chunk: at most ``batch_networks`` and within ``MEMORY_BUDGET``."""
    if batch_networks < 1:
        raise ConfigError("batch_networks", batch_networks, "a positive integer")
    m = models[0]
    item = next((p.element_size() for p in m.parameters()), 4)
    params = sum(p.numel() for p in m.parameters() if p.requires_grad)
    feats = getattr(m, "head", m)
    d = int(getattr(feats, "d_in", 0) or 0)
    width = int(getattr(feats, "width", 0) or 0)
    twin = fused.plan(m)
    z0 = n * twin.width if twin is not None and twin.linear else 0  # a twin's x̃W₀ᵀ, all n
    per = item * (5 * params + (n + 2 * bs) * d + 3 * bs * width + z0)
    return max(1, min(batch_networks, MEMORY_BUDGET // max(per, 1)))


def train_batched(
    models: Sequence[nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainSpec,
    *,
    generators: Sequence[torch.Generator],
    excludes: Sequence[int | None] | None = None,
    stop: StopRule | None = None,
    should_stop: Callable[[], bool] | None = None,
    batch_networks: int = BATCH_NETWORKS,
    raise_diverged: bool = True,
    sync: Callable[[int, int], bool] | None = None,
    perturbs: Sequence[Perturb] | None = None,
    tick: float | None = None,
) -> Iterator[BatchedEpoch]:
    """Train every model of ``models`` in place on x [n, d], y [n] as ``engine.train.train``
    trains it alone with ``generators[b]`` and ``exclude=excludes[b]``; or, with y [B, n]
    and x [B, n, ...] (one data set per network, e.g. the seeds of a sweep, each its own
    subset), network b on x[b], y[b] (same n for all). Yields a
    ``BatchedEpoch`` after each epoch of each chunk (chunks of at most ``batch_networks``
    networks, trained one after another).

    Every network runs ``cfg.epochs`` epochs unless ``stop(b, losses)`` says so earlier
    (e.g. ``engine.train.until.stop_now``). ``should_stop()`` is polled every step (True:
    ``Cancelled``). A network whose loss is not finite, or whose epoch mean exceeds
    ``DIVERGE_FACTOR`` × max(its first batch loss, 1), raises ``DivergedError`` naming it
    (``raise_diverged``), or else stops and is reported in ``BatchedEpoch.diverged``.
    The models must share a class and parameter shapes, or, on the fused step, be
    closed-form networks of one head shape (``stackable``: 2L-ReLU with MLP-Attn).

    ``sync(b, epoch)`` True: network b's current weights are written into its model before
    that epoch's ``BatchedEpoch`` is yielded (a probe that reads the model mid-training,
    e.g. the kernel drift), the model left in train mode; a stopped network's model always
    holds its final weights, in eval mode.

    ``perturbs[b]`` (adversarial training, the fused step only): network b's raw
    mini-batch is replaced by ``perturbs[b](model_b, xb, yb)`` before each step, the model
    holding its current weights, and its features taken of what that returns; the
    closed-form PGD of one recipe (``make_pgd_perturb``) runs for every network of a
    chunk in one iterate (``engine.train.adversarial.perturb_stacked``).

    ``tick``: also yield, between two steps of an epoch once ``tick`` seconds passed since
    the last, a ``BatchedEpoch`` whose ``tick`` holds the epoch's steps so far (a long
    adversarial epoch's progress, as ``engine.train.train(..., tick=…)``).
    """
    nets = list(models)
    if not nets:
        return
    if len(generators) != len(nets):
        raise ConfigError("generators", len(generators), f"one per network ({len(nets)})")
    excl: list[int | None] = list(excludes) if excludes is not None else [None] * len(nets)
    if len(excl) != len(nets):
        raise ConfigError("excludes", len(excl), f"one per network ({len(nets)})")
    if perturbs is not None and len(perturbs) != len(nets):
        raise ConfigError("perturbs", len(perturbs), f"one per network ({len(nets)})")
    per = y.dim() == 2  # one subset per network
    if per and (y.shape[0] != len(nets) or x.shape[:2] != y.shape):
        raise ConfigError(
            "x, y",
            f"{tuple(x.shape)}, {tuple(y.shape)}",
            f"x [B, n, ...], y [B, n] with B = {len(nets)}",
        )
    n = y.shape[-1]
    for e in excl:
        if e is not None and not (0 <= e < n):
            raise ConfigError(
                "exclude", e, f"an index in 0..{n - 1} (the training set has {n} points)"
            )
    if not stackable(nets, cfg):
        raise ConfigError(
            "models",
            "mixed",
            "networks of one class and one parameter shape (on the fused step: "
            "closed-form networks of one head shape)",
        )
    bs = n if cfg.optimizer == "gd" else min(cfg.batch_size, n)
    size = chunk_size(nets, n, bs, batch_networks)
    size = -(-len(nets) // -(-len(nets) // size))  # even chunks: 82 at 64 → 41 + 41
    for lo in range(0, len(nets), size):
        hi = min(lo + size, len(nets))
        xs, ys = (x[lo:hi], y[lo:hi]) if per else (x, y)
        own = None if perturbs is None else list(perturbs[lo:hi])
        gens = list(generators[lo:hi])
        chunk = Chunk(nets[lo:hi], xs, ys, cfg, bs, gens, excl[lo:hi], lo, own)
        with step_threads(nets[lo], bs * (hi - lo), x.device):
            yield from chunk.run(stop, should_stop, raise_diverged, sync, tick)


def train_one(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainSpec,
    *,
    generator: torch.Generator,
    should_stop: Callable[[], bool] | None = None,
    exclude: int | None = None,
    perturb: Perturb | None = None,
    tick: float | None = None,
) -> Iterator[EpochStats]:
    """``engine.train.train`` of one network through a chunk of one: the same
    ``EpochStats`` (and ``BatchTick`` with ``tick``) and errors (``DivergedError`` with the
    loop's message); the model holds each epoch's weights when its stats are yielded (a
    caller may stop there)."""
    for ev in train_batched(
        [model],
        x,
        y,
        cfg,
        generators=[generator],
        excludes=[exclude],
        should_stop=should_stop,
        batch_networks=1,
        raise_diverged=False,
        sync=lambda b, e: True,
        perturbs=None if perturb is None else [perturb],
        tick=tick,
    ):
        if ev.tick is not None:
            yield ev.tick
            continue
        if ev.diverged:
            raise DivergedError(ev.diverged[0])
        yield ev.stats[0]
