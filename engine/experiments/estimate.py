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
from dataclasses import dataclass

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


def planned_flops_by_experiment(spec: RunSpec) -> dict[str, float]:
    """FLOPs of the dense work ``spec`` plans, per experiment (resolved through the registry).

    Training: 6·n·d·m per epoch per model × width × seed (forward + backward), counted
    once under the first experiment that trains those widths (``train`` or ``ntk`` share
    their models, as the run does); adversarial training multiplies by the attack's
    steps (``flip.adv_training_steps()``); flips: 4·n·d·m per attack step per ε;
    landscape: 2·n·d·m per surface point and 4·n·d·m per Hessian-vector product; kernels:
    2·N²·(d + m) per eNTK of N = n_train + n_test rows and n³ per solve or
    eigendecomposition (``ntk``: two eNTKs and Θ∞ per cell; ``spectrum``: the SVD of the
    n×d Gram factor and three n×n eigendecompositions on at most ``MAX_KERNEL_N`` rows,
    per data set, counted twice for float64).
    """
    from engine.data import get_info
    from engine.experiments.registry import select

    exps = [e.name for e in select(spec.experiment)]
    d = math.prod(get_info(spec.data.name).image_shape)
    n, ep, seeds, kinds = (
        spec.data.n_train,
        spec.train.epochs,
        len(spec.seeds),
        len(spec.model.kinds),
    )
    big_n = n + spec.data.n_test
    fl, la = spec.flip, spec.landscape
    out: dict[str, float] = {}
    trained: set[int] = set()

    def training(widths: set[int]) -> float:
        new = widths - trained
        trained.update(new)
        return sum(6.0 * n * d * w * ep for w in new) * kinds * seeds

    for name in exps:
        total = 0.0
        if name in ("train", "ntk"):
            total += training(set(spec.model.widths))
        if name == "ntk":
            for w in spec.model.widths:
                total += (2 * 2.0 * big_n**2 * (d + w) + 2 * big_n**3) * kinds * seeds
        if name == "flip":
            total += training({fl.width})
            steps = 1 + fl.pgd_steps + fl.mim_steps
            total += 4.0 * n * d * fl.width * steps * kinds * seeds * len(fl.eps)
        if name == "advtrain":
            total += 6.0 * n * d * fl.width * ep * (1 + fl.adv_training_steps()) * kinds * seeds
            steps = 1 + fl.pgd_steps + fl.mim_steps
            total += 4.0 * n * d * fl.width * steps * kinds * seeds * len(fl.eps)
        if name == "landscape":
            total += training({la.width})
            points = la.points_1d + la.points_2d**2
            hvps = la.hessian_iters + la.hutchinson_samples
            total += (2.0 * points + 4.0 * hvps) * n * d * la.width * kinds * seeds
        if name == "spectrum":
            from engine.experiments.exp_spectrum import MAX_KERNEL_N

            k = min(n, MAX_KERNEL_N)
            per_set = 2.0 * (4.0 * n * d * min(n, d) + 3 * 9.0 * k**3)
            total += per_set * (1 + len(spec.spectrum.datasets))
        out[name] = total
    return out


def planned_flops(spec: RunSpec) -> float:
    """FLOPs of all the dense work ``spec`` plans (``planned_flops_by_experiment`` summed)."""
    return sum(planned_flops_by_experiment(spec).values())


def floor_seconds(flops: float, flops_per_s: float) -> float:
    """The FLOP floor: seconds the planned FLOPs take at this machine's matmul rate."""
    return flops / flops_per_s


def estimate_seconds(specs: Sequence[RunSpec], *, flops_per_s: float | None = None) -> float:
    """Estimated wall seconds of running every spec of ``specs`` on this machine.

    ``flops_per_s``: the machine's matmul rate (default: ``probe_flops()``, 0.1 s).
    """
    rate = flops_per_s if flops_per_s is not None else probe_flops()
    total = sum(planned_flops(s) for s in specs)
    return OVERHEAD * floor_seconds(total, rate) + PER_RUN_SECONDS * len(specs)


@dataclass(frozen=True)
class PlanLine:
    """One (run, experiment) line of a plan's time budget."""

    run: str
    experiment: str
    flops: float
    floor_s: float
    """Seconds at this machine's matmul rate: the FLOP floor."""
    estimate_s: float
    """``OVERHEAD`` × the floor (the per-run fixed cost is its own line)."""


def breakdown(
    runs: Sequence[tuple[str, RunSpec]], *, flops_per_s: float | None = None
) -> list[PlanLine]:
    """The time budget of ``runs`` ((name, spec) pairs) line by line: each experiment of
    each run, then one ``(fixed)`` line of ``PER_RUN_SECONDS`` per run. The estimates add
    up to ``estimate_seconds`` of the same specs and rate."""
    rate = flops_per_s if flops_per_s is not None else probe_flops()
    lines = [
        PlanLine(name, exp, f, floor_seconds(f, rate), OVERHEAD * floor_seconds(f, rate))
        for name, spec in runs
        for exp, f in planned_flops_by_experiment(spec).items()
    ]
    fixed = PER_RUN_SECONDS * len(runs)
    return [*lines, PlanLine("(all)", "(fixed: data, spectra, summaries)", 0.0, 0.0, fixed)]


def hms(seconds: float) -> str:
    """``1h05m`` / ``4m09s``: an estimate as the CLI and the TUI print it."""
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"
