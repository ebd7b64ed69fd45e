"""The time estimate of ``influence_check`` (``engine.experiments.estimate``), registered
with the experiment: its networks, kernels, PBRF solves and retrainings."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from engine.experiments.work import (
    BATCHED_STEP,
    FusedSteps,
    Plan,
    Work,
    merge_fused,
    stack_chunks,
)

if TYPE_CHECKING:
    from engine.run.spec import InfluenceCheckSpec

LBFGS_HISTORY = 20
"""The PBRF's L-BFGS history (``engine.influence.pbrf._lbfgs``), for its estimate."""
POLISH_ROUNDS = 6
"""Active-set rounds a point takes from L-BFGS's iterate, block and monotone together, on
average over a cell's points (docs/benchmarks.md#influence-check-pbrf), for the estimate."""
PINNED_FRACTION = 0.005
"""Of the n·m (training point, unit) pairs, those pinned at a kink on average over the
rounds (docs/benchmarks.md#influence-check-pbrf): each adds an unknown to the polish."""
POLISH_PASSES = 4
"""[n, n] × [n, m] products a point and round of the polish (the system's build, z = z* +
GA, the merit's G A, the line search's), 2·n²·m FLOPs each."""


def pbrf_work(ic: InfluenceCheckSpec, d: int) -> Work:
    """One cell's PBRF truth (``_pbrf``): a solve of S = ``pbrf_steps`` L-BFGS steps
    (2·S with the noise floor: one longer solve, its checkpoint the truth) for the k
    removed points at once, on the span head (P = m·r parameters a point, r = min(n, d)).
    A step is a value-and-gradient of the k networks (6·k·n·r·m FLOPs) and about two
    line-search forwards (2·k·n·r·m each; 79 over 50 steps measured on MNIST 3 vs 8),
    in float64 (counted twice); and the two-loop recursion, which streams its history
    (up to ``LBFGS_HISTORY`` pairs of [k, P] float64) through memory twice a step, 5
    element passes a pair and loop, plus about 10 for the step's own updates:
    ``Work.streamed``, priced by ``probe_stream_seconds``. Then (2L-ReLU, MLP-Attn) the
    active set over the ReLU kinks, once for the truth and once for the floor: per point
    ``POLISH_ROUNDS`` rounds, each a dense LU of size N = n + ``PINNED_FRACTION``·n·m (one
    output), (2/3)·N³ FLOPs, and ``POLISH_PASSES`` products with G, in float64 (counted
    twice); the points of a cell are one batch, so a step's overhead a round, not a point
    and round."""
    steps = ic.pbrf_steps * (2 if ic.noise_floor else 1) * (ic.truth != "retrain")
    n, m = ic.n_train, ic.width
    r = min(n, d)
    top = min(ic.top, n)
    k = top + min(ic.random, n - top)
    flops = 2 * 10.0 * k * n * r * m * steps
    pairs = sum(min(i, LBFGS_HISTORY) for i in range(steps))
    streamed = k * m * r * (10.0 * pairs + 10.0 * steps)
    polishes = (2 if ic.noise_floor else 1) * (ic.truth != "retrain")
    size = n + PINNED_FRACTION * n * m
    rounds = k * polishes * POLISH_ROUNDS
    flops += 2 * ((2.0 / 3.0) * size**3 + POLISH_PASSES * 2.0 * n * n * m) * rounds
    return Work(flops, 3.0 * steps + polishes * POLISH_ROUNDS, 0.0, (), streamed)


def influence_check_work(p: Plan) -> Work:
    """Per model and seed: the network on its own subset (``influence_check.n_train``),
    its eNTKs and solves, the PBRF truth (``pbrf_work``: autograd whatever trained the
    network) and, for the retraining truth, (top + random + 1) retrainings per batch
    order (two with the noise floor): their FLOPs as training's, their steps per chunk of
    ``train.batch_networks`` networks (``BATCHED_STEP`` each; 1: one a network)."""
    spec, d = p.spec, p.d
    ic, tr = spec.influence_check, spec.train
    n, m, ep = ic.n_train, ic.width, p.ep
    batches = 1 if tr.optimizer == "gd" else math.ceil(n / min(tr.batch_size, n))
    nets = (ic.top + ic.random + 1) * (2 if ic.noise_floor else 1)
    nets *= ic.truth != "pbrf"  # the PBRF truth retrains nothing
    big_n = n + ic.n_test
    kernels = 2 * 2.0 * big_n**2 * (d + m) + 3.0 * n**3
    one = 4.0 * n * d * m * ep
    if tr.batch_networks > 1:
        steps = BATCHED_STEP * math.ceil(nets / tr.batch_networks) * ep * batches
    else:
        steps = float(nets * ep * batches)
    pbrf = pbrf_work(ic, d)
    truth = Work(pbrf.flops * p.cells, pbrf.steps * p.cells, 0.0, (), pbrf.streamed * p.cells)
    flops = ((1 + nets) * one + kernels) * p.cells
    if not p.n_fused:
        return truth + Work(flops, (ep * batches + steps) * p.cells)
    # fused kinds: the cell's network alone, then its retrainings (if any) in even chunks
    fused: FusedSteps = ((1, ep * batches * p.seeds * p.n_fused),)
    if nets:
        chunks, per = stack_chunks(nets, tr.batch_networks)
        fused = merge_fused(fused, ((per, chunks * ep * batches * p.seeds * p.n_fused),))
    return truth + Work(flops, (ep * batches + steps) * p.seeds * p.n_auto, 0.0, fused)
