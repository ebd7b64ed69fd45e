"""Run-time estimates from planned work: FLOPs and steps of a spec, timed against this machine.

One model for every front end: ``malleability reproduce --dry-run`` prints it, the TUI asks
for confirmation before a run it puts over ten minutes and weights its ETA by it. Coarse
by design (a factor of about two either way). The work is counted by each experiment's
estimate on a ``work.Plan`` of the spec (``engine.experiments.work``, where the factors
named below live); its terms, each timed here by a probe:

* the dense matmuls of training, attacks, landscape evaluations and kernels, at the
  rate of a float32 matmul (``probe_flops``) times ``OVERHEAD``: the FLOP floor;
* training's matmuls, when the step's own shapes are probed (``probe_shape_flops``: the
  five products of a step of [b, d] inputs at width m), at that rate times
  ``TRAIN_OVERHEAD``: at batch 32 those thin products run at 0.5–0.65 of the square
  probe, which no BLAS changes (docs/benchmarks-training.md);
* the optimiser's update of every trained parameter a step (Adam's or SGD's element-wise
  kernel, memory-bound and not counted as FLOPs), timed on a large layer
  (``probe_update_seconds``): at batch 32 it is as long as the step's matmuls (MNIST's
  d 784, m 1024–4096: 37–46 % of a fused step, ``benchmarks/bench_fused_step.py --parts
  floor``, docs/benchmarks-training.md);
* the fixed cost of every optimiser step, attack step and evaluation pass (Python,
  autograd, the optimiser, reading the loss), timed on the real training loop of a tiny
  network (``probe_step_seconds``) for the path that will run: autograd (QKV-Attn,
  landscape passes, ``train.engine = "autograd"``) or the fused closed-form step
  (2L-ReLU, MLP-Attn, their twins: ``engine.train.fused``) with as many networks stacked
  in one step as the run stacks; their adversarial training's passes (a closed-form
  input gradient, the seeds stacked) as stacked fused steps, their attacks' steps as fused
  steps of one network. Small widths are bound by it, large ones by FLOPs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.experiments.probes import (
    probe_flops,
    probe_shape_flops,
    probe_step_seconds,
    probe_stream_seconds,
    probe_update_seconds,
)
from engine.experiments.work import NOMINAL_STREAM_S, NOMINAL_UPDATE_S, Plan, Work
from engine.run.spec import RunSpec

__all__ = [
    "probe_flops",
    "probe_shape_flops",
    "probe_step_seconds",
    "probe_stream_seconds",
    "probe_update_seconds",
]  # the probes live in ``engine.experiments.probes``; callers may import them from here

PER_RUN_SECONDS = 2.0
"""Fixed cost of a run: data loading, spectra, summaries."""
NOMINAL_FLOPS_PER_S = 8e10
NOMINAL_STEP_S = 6e-4
"""A 2-core CPU's probes (this project's CI class), for shares that need no probe (ETA
weights; with ``work.NOMINAL_STREAM_S`` and ``NOMINAL_UPDATE_S``)."""
CONFIRM_SECONDS = 600.0
"""The TUI asks before starting a run estimated over this (ten minutes)."""


def planned_work(spec: RunSpec) -> dict[str, Work]:
    """The work ``spec`` plans, per experiment (resolved through the registry, run order):
    each experiment's own estimate (registered with it, ``registry.register``) on one
    ``Plan`` of the spec, so networks two experiments share are counted once."""
    from engine.experiments.registry import select

    p = Plan(spec)
    return {e.name: e.estimate(p) for e in select(spec.experiment)}


def planned_shares(spec: RunSpec) -> dict[str, float]:
    """Each experiment's share of the run's estimated time on the nominal machine
    (``NOMINAL_FLOPS_PER_S``, ``NOMINAL_STEP_S``), in run order; they sum to 1."""
    secs = {
        k: w.seconds(NOMINAL_FLOPS_PER_S, NOMINAL_STEP_S) for k, w in planned_work(spec).items()
    }  # fused steps at the same nominal price: shares only
    total = sum(secs.values())
    return {k: (v / total if total > 0 else 1 / len(secs)) for k, v in secs.items()}


def planned_flops(spec: RunSpec) -> float:
    """FLOPs of all the dense work ``spec`` plans (``planned_work`` summed)."""
    return sum(w.flops for w in planned_work(spec).values())


def estimate_seconds(
    specs: Sequence[RunSpec],
    *,
    flops_per_s: float | None = None,
    step_s: float | None = None,
    fused_s: Callable[[int], float] | None = None,
    stream_s: float | None = None,
    update_s: float | Callable[[str], float] | None = None,
    shape_rate: Callable[[int, int, int], float] | None = None,
) -> float:
    """Estimated wall seconds of running every spec of ``specs`` on this machine.

    ``flops_per_s``: the machine's matmul rate (default: ``probe_flops()``, 0.1 s);
    ``step_s``: the autograd loop's cost a step (default: ``probe_step_seconds()``);
    ``fused_s(B)``: a fused step of B stacked networks (default: ``step_s`` when that is
    given, else ``probe_step_seconds("fused", B)``); ``stream_s``, ``update_s``: as
    ``breakdown``.
    """
    runs = [("", s) for s in specs]
    lines = breakdown(
        runs,
        flops_per_s=flops_per_s,
        step_s=step_s,
        fused_s=fused_s,
        stream_s=stream_s,
        update_s=update_s,
        shape_rate=shape_rate,
    )
    return sum(ln.estimate_s for ln in lines)


def first_check(spec: RunSpec) -> RunSpec:
    """``spec`` with every cell stopping at its first convergence check (``train.epochs``):
    under ``train.until = "converged"`` the estimate counts the cap's epochs, an upper
    bound; this spec's estimate is the lower one (the quick digits presets stop most cells
    there: measured 0.22–0.31 of the cap's estimate, docs/benchmarks.md#estimate-runs).
    ``spec`` itself when it trains a fixed number of epochs."""
    return spec.replace(train__until="fixed") if spec.train.until == "converged" else spec


STOP_SHARE = 0.45
"""Under ``train.until = "converged"``: the share of the epochs between the first check
(``train.epochs``) and the cap that a run's training is expected to take. Measured on
``reproduce --dataset digits --quick`` (fused, 3 seeds; the epochs each cell stopped at,
from its run folder's events): 0.39 of the span for the 10-class networks (m 16 near
the cap, m ≥ 256 at the first check), 0.61 for adversarial training, 0.0–0.03 for the
binary parts; the idle autograd run (327 s against 131 s at the first check and 581 s
at the cap, docs/benchmarks-training.md#quick-idle) puts its whole time at 0.44."""


def until_estimate(
    specs: Sequence[RunSpec], priced: Callable[[Sequence[RunSpec]], float]
) -> tuple[float, float, float]:
    """(expected, low, cap) seconds of ``specs`` by ``priced`` (``estimate_seconds`` with
    this machine's probes): ``cap`` counts every cell at its epoch cap (the upper bound),
    ``low`` at its first check (``first_check``), and the expected time lies
    ``STOP_SHARE`` of the way from low to cap (the estimate is linear in the epochs, so
    this prices every cell at its expected stopping epoch). Specs of fixed epochs: all
    three equal."""
    cap = priced(specs)
    low = priced([first_check(s) for s in specs])
    return low + STOP_SHARE * (cap - low), low, cap


@dataclass(frozen=True)
class PlanLine:
    """One (run, experiment) line of a plan's time budget."""

    run: str
    experiment: str
    flops: float
    floor_s: float
    """Seconds of the FLOPs at this machine's matmul rate: the FLOP floor."""
    steps: float
    """Steps of either path (a stacked fused step counted once)."""
    estimate_s: float
    """``OVERHEAD`` × the floor + each path's steps × its probe's step cost."""
    fused_steps: float = 0.0
    """Of ``steps``, those of the fused path."""
    updated: float = 0.0
    """Parameter updates (``Work.updated``)."""


def fused_probe(b: int) -> float:
    """``probe_step_seconds("fused", b)``: a stacked fused step of ``b`` networks."""
    return probe_step_seconds("fused", b)


def fused_step_price(specs: Sequence[RunSpec]) -> float:
    """Seconds a fused step of ``specs`` costs on average over their stack sizes
    (``fused_probe`` each, weighted by its steps); 0 when none is fused."""
    work = Work()
    for spec in specs:
        for w in planned_work(spec).values():
            work += w
    steps = sum(v for _, v in work.fused)
    return sum(v * fused_probe(b) for b, v in work.fused) / steps if steps else 0.0


def breakdown(
    runs: Sequence[tuple[str, RunSpec]],
    *,
    flops_per_s: float | None = None,
    step_s: float | None = None,
    fused_s: Callable[[int], float] | None = None,
    stream_s: float | None = None,
    update_s: float | Callable[[str], float] | None = None,
    shape_rate: Callable[[int, int, int], float] | None = None,
) -> list[PlanLine]:
    """The time budget of ``runs`` ((name, spec) pairs) line by line: each experiment of
    each run, then one ``(fixed)`` line of ``PER_RUN_SECONDS`` per run; the estimates add
    up to ``estimate_seconds`` of the same specs and machine (``fused_s``: as there;
    ``stream_s``: seconds per streamed element, default ``probe_stream_seconds()``, or
    ``NOMINAL_STREAM_S`` when ``step_s`` is given; ``update_s``: seconds per parameter
    update, or a function of the optimiser's name giving them (``probe_update_seconds``,
    the default, or ``NOMINAL_UPDATE_S`` when ``step_s`` is given); ``shape_rate(b, d, m)``:
    the FLOP/s of a training step of that shape (``probe_shape_flops``, the default when
    ``flops_per_s`` is not given; else training's FLOPs at ``OVERHEAD`` × the floor)."""
    rate = flops_per_s if flops_per_s is not None else probe_flops()
    if shape_rate is None and flops_per_s is None:
        shape_rate = probe_shape_flops
    if fused_s is None and step_s is None:
        fused_s = fused_probe
    step = step_s if step_s is not None else probe_step_seconds()
    if stream_s is None:
        stream_s = probe_stream_seconds() if step_s is None else NOMINAL_STREAM_S

    def update(spec: RunSpec) -> float:
        if update_s is None:
            return (
                probe_update_seconds(spec.train.optimizer) if step_s is None else NOMINAL_UPDATE_S
            )
        return update_s(spec.train.optimizer) if callable(update_s) else update_s

    lines = [
        PlanLine(
            name,
            exp,
            w.flops,
            w.flops / rate,
            w.all_steps,
            w.seconds(rate, step, fused_s, stream_s, update(spec), shape_rate),
            w.all_steps - w.steps,
            w.updated,
        )
        for name, spec in runs
        for exp, w in planned_work(spec).items()
    ]
    fixed = PER_RUN_SECONDS * len(runs)
    return [*lines, PlanLine("(all)", "(fixed: data, spectra, summaries)", 0.0, 0.0, 0.0, fixed)]
