"""Run-time estimates from planned work: FLOP counts of a spec, timed against this machine.

One model for every front end: ``malleability reproduce --dry-run`` prints it, the TUI asks
for confirmation before a run it puts over ten minutes. Coarse by design (a factor of
about two either way): it counts the dense matmuls of training, attacks and landscape
evaluations, and multiplies by ``OVERHEAD`` for Python, small kernels and I/O.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from engine.experiments.spec import RunSpec

OVERHEAD = 3.0
"""Measured seconds ÷ (FLOPs ÷ matmul FLOP/s) on the quick preset: Python, kernels, I/O."""
PER_RUN_SECONDS = 5.0
"""Fixed cost of a run: data loading, spectra, summaries."""
CONFIRM_SECONDS = 600.0
"""The TUI asks before starting a run estimated over this (ten minutes)."""


def probe_flops(seconds: float = 0.1) -> float:
    """This machine's float32 matmul FLOP/s, timed for about ``seconds`` ([512, 784] @ [784, 1024])."""
    import torch

    a = torch.randn(512, 784)
    b = torch.randn(784, 1024)
    t0 = time.perf_counter()
    reps = 0
    while time.perf_counter() - t0 < seconds:
        a @ b
        reps += 1
    return reps * 2 * 512 * 784 * 1024 / (time.perf_counter() - t0)


def planned_flops(spec: RunSpec) -> float:
    """FLOPs of the dense work ``spec`` plans (its experiments resolved through the registry).

    Training: 6·n·d·m per epoch per model × width × seed (forward + backward); adversarial
    training multiplies by the attack's steps; flips: 4·n·d·m per attack step per ε;
    landscape: 2·n·d·m per surface point and 4·n·d·m per Hessian-vector product.
    """
    from engine.data import get_info
    from engine.experiments.registry import select

    exps = {e.name for e in select(spec.experiment)}
    d = math.prod(get_info(spec.data.name).image_shape)
    n, ep, seeds, kinds = (
        spec.data.n_train,
        spec.train.epochs,
        len(spec.seeds),
        len(spec.model.kinds),
    )
    fl, la = spec.flip, spec.landscape
    widths: set[int] = set(spec.model.widths) if {"train", "ntk"} & exps else set()
    if {"flip", "advtrain"} & exps:
        widths.add(fl.width)
    if "landscape" in exps:
        widths.add(la.width)
    total = sum(6.0 * n * d * w * ep for w in widths) * kinds * seeds
    if "advtrain" in exps:
        total += 6.0 * n * d * fl.width * ep * (1 + fl.pgd_steps) * kinds * seeds
    if "flip" in exps:
        steps = 1 + fl.pgd_steps + fl.mim_steps
        total += 4.0 * n * d * fl.width * steps * kinds * seeds * len(fl.eps)
    if "landscape" in exps:
        points = la.points_1d + la.points_2d**2
        hvps = la.hessian_iters + la.hutchinson_samples
        total += (2.0 * points + 4.0 * hvps) * n * d * la.width * kinds * seeds
    return total


def estimate_seconds(specs: Sequence[RunSpec], *, flops_per_s: float | None = None) -> float:
    """Estimated wall seconds of running every spec of ``specs`` on this machine.

    ``flops_per_s``: the machine's matmul rate (default: ``probe_flops()``, 0.1 s).
    """
    rate = flops_per_s if flops_per_s is not None else probe_flops()
    total = sum(planned_flops(s) for s in specs)
    return OVERHEAD * total / rate + PER_RUN_SECONDS * len(specs)


def hms(seconds: float) -> str:
    """``1h05m`` / ``4m09s``: an estimate as the CLI and the TUI print it."""
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"
