"""Run-time estimates from planned work: FLOPs and steps of a spec, timed against this machine.

One model for every front end: ``malleability reproduce --dry-run`` prints it, the TUI asks
for confirmation before a run it puts over ten minutes and weights its ETA by it. Coarse
by design (a factor of about two either way). Two terms, each timed here by a probe:

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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from engine.experiments.probes import (
    probe_flops,
    probe_shape_flops,
    probe_step_seconds,
    probe_stream_seconds,
    probe_update_seconds,
)
from engine.run.spec import RunSpec

__all__ = [
    "probe_flops",
    "probe_shape_flops",
    "probe_step_seconds",
    "probe_stream_seconds",
    "probe_update_seconds",
]  # the probes live in ``engine.experiments.probes``; callers may import them from here

OVERHEAD = 1.3
"""Seconds ÷ FLOP floor of the dense work at large width: ``benchmarks/bench_train.py``
reaches 0.68–0.77 of its matmul probe at m 256–1024 (CIFAR-10, 2 cores)."""
TRAIN_OVERHEAD = 1.15
"""Seconds ÷ the step's own matmul floor (``probe_shape_flops``) of training's FLOPs, its
update and fixed cost priced apart: a fused step of MNIST's shape (d 784, 10 classes)
took 1.16, 1.04, 1.06 and 1.39× its five products' time once its update was taken out
(m 1024 and 4096 at batch 800, m 4096 and 1024 at batch 32; ``OMP_NUM_THREADS=1
benchmarks/bench_fused_step.py --parts floor --clock cpu --repeat 5``, load 4.6–5.2;
docs/benchmarks-training.md#floor). What is left is ReLU, the mask, the gather of the
batch and, in the 1.39, the step's fixed cost, which the step probe prices again."""
PER_RUN_SECONDS = 2.0
"""Fixed cost of a run: data loading, spectra, summaries."""
NOMINAL_FLOPS_PER_S = 8e10
NOMINAL_STEP_S = 6e-4
NOMINAL_STREAM_S = 1e-9
NOMINAL_UPDATE_S = 1e-9
"""A 2-core CPU's probes (this project's CI class), for shares that need no probe (ETA weights)."""
CONFIRM_SECONDS = 600.0
"""The TUI asks before starting a run estimated over this (ten minutes)."""


Shape = tuple[int, int, int]
"""A training step's (batch b, input features d, width m)."""
ShapedFlops = tuple[tuple[Shape, float], ...]
"""Training FLOPs by their step's shape, sorted by shape."""


K = TypeVar("K", int, Shape)


def _merge(
    a: tuple[tuple[K, float], ...], b: tuple[tuple[K, float], ...]
) -> tuple[tuple[K, float], ...]:
    """Two keyed counts together, summed per key, sorted by key."""
    out: dict[K, float] = dict(a)
    for k, v in b:
        out[k] = out.get(k, 0.0) + v
    return tuple(sorted(out.items()))


merge_shaped = _merge
"""The shaped FLOPs of two pieces of work together."""

FusedSteps = tuple[tuple[int, float], ...]
"""Fused steps by stack size: ((B, steps of B networks stacked), ...), sorted by B."""

merge_fused = _merge
"""The fused steps of two pieces of work together, by stack size."""


@dataclass(frozen=True)
class Work:
    """The planned work of one experiment: dense FLOPs (``batched``: those of them trained
    side by side through autograd, ``engine.train.batched``), passes that each cost an
    autograd step (``steps``), fused steps by stack size (``fused``), and float64
    elements streamed through memory by vector updates too large for the cache
    (``streamed``: the PBRF's L-BFGS history), priced by ``probe_stream_seconds``."""

    flops: float = 0.0
    steps: float = 0.0
    batched: float = 0.0
    fused: FusedSteps = ()
    streamed: float = 0.0
    adversarial: float = 0.0
    """Of ``flops``, adversarial training's, priced at ``ADV_OVERHEAD``."""
    updated: float = 0.0
    """Parameter updates: trained parameters × optimiser steps (either path), each priced
    at ``probe_update_seconds``."""
    shaped: ShapedFlops = ()
    """Of ``flops``, training's (networks trained one at a time or fused-stacked) by their
    step's shape, priced at ``TRAIN_OVERHEAD`` × the shape's own rate when one is given."""

    def __add__(self, other: Work) -> Work:
        return Work(
            self.flops + other.flops,
            self.steps + other.steps,
            self.batched + other.batched,
            merge_fused(self.fused, other.fused),
            self.streamed + other.streamed,
            self.adversarial + other.adversarial,
            self.updated + other.updated,
            merge_shaped(self.shaped, other.shaped),
        )

    @property
    def all_steps(self) -> float:
        """Steps of either path (a stacked fused step counted once)."""
        return self.steps + sum(v for _, v in self.fused)

    def seconds(
        self,
        flops_per_s: float,
        step_s: float,
        fused_s: Callable[[int], float] | None = None,
        stream_s: float = NOMINAL_STREAM_S,
        update_s: float = NOMINAL_UPDATE_S,
        shape_rate: Callable[[int, int, int], float] | None = None,
    ) -> float:
        """Estimated seconds: ``OVERHEAD`` × the FLOP floor (``BATCHED_OVERHEAD`` for the
        batched FLOPs, ``ADV_OVERHEAD`` for the adversarial ones, and, given
        ``shape_rate(b, d, m)`` (FLOP/s), ``TRAIN_OVERHEAD`` × the shaped FLOPs at their
        shape's rate), plus ``steps`` × ``step_s``, plus each stack size's fused steps ×
        ``fused_s(B)`` (None: ``step_s``), plus ``streamed`` × ``stream_s``, plus
        ``updated`` × ``update_s``."""
        plain = self.flops - self.batched - self.adversarial
        alone = 0.0
        if shape_rate is not None and self.shaped:
            plain -= sum(v for _, v in self.shaped)
            alone = TRAIN_OVERHEAD * sum(v / shape_rate(*k) for k, v in self.shaped)
        alone += OVERHEAD * plain / flops_per_s
        alone += ADV_OVERHEAD * self.adversarial / flops_per_s + self.steps * step_s
        alone += sum(v * (fused_s(b) if fused_s else step_s) for b, v in self.fused)
        alone += self.streamed * stream_s + self.updated * update_s
        return alone + BATCHED_OVERHEAD * self.batched / flops_per_s if self.batched else alone


def fused_kinds(spec: RunSpec) -> set[str]:
    """The model kinds of ``spec`` that train with the fused step (``engine.train.fused``:
    2L-ReLU and MLP-Attn, unless ``train.engine`` is autograd)."""
    if spec.train.engine != "fused":
        return set()
    return {k for k in spec.model.kinds if k in FUSED_KINDS}


FUSED_KINDS = ("relu", "attn")
"""The kinds ``engine.train.fused.plan`` accepts (QKV-Attn trains its attention)."""


def stack_chunks(nets: int, batch_networks: int) -> tuple[int, int]:
    """(chunks, networks a chunk) of ``nets`` networks in even chunks of at most
    ``batch_networks`` (``engine.train.batched.train_batched``)."""
    chunks = math.ceil(nets / max(1, batch_networks))
    return chunks, math.ceil(nets / chunks)


class Plan:
    """What every experiment's estimate reads of one spec (``planned_work``): its sizes,
    and how its networks train (``seeded``, ``training``, ``one_at_a_time``). Training is
    counted once under the first experiment that trains those widths (``train``, ``ntk``,
    ``flip`` and ``landscape`` share models of the same width, as the run does).

    FLOP counts: training 4·n·d·m per epoch per model × width × seed (the forward X̃Wᵀ
    and the weight gradient; the first layer's input is fixed, so no input gradient).
    Epochs are ``train.max_epochs`` under ``train.until = "converged"`` (the estimate is
    then an upper bound). Steps: optimiser steps (epochs × mini-batches; full-batch GD one
    an epoch), attack steps and evaluation passes, each with the loop's fixed cost.

    Steps of the fused kinds (``fused_kinds``: 2L-ReLU and MLP-Attn under
    ``train.engine = "fused"``) are ``Work.fused``: the seeds of one (kind, width), and
    their twins, always stacked (``RunContext.plan_batches``), one stacked step a chunk of
    seeds. For the autograd kinds, with ``train.batch_networks`` > 1 and several seeds,
    the seeds train side by side where ``worth_batching`` says so: their FLOPs are
    ``Work.batched`` and their steps ``BATCHED_STEP`` per chunk of seeds. Adversarial
    training of a fused kind stacks its seeds, attacks included (``adversarial``: a
    stacked fused step a pass, its FLOPs at ``ADV_OVERHEAD``); the attacks of flip, and
    every autograd kind's adversarial passes, run one network at a time.
    """

    def __init__(self, spec: RunSpec) -> None:
        from engine.data import image_shape
        from engine.device import resolve_device
        from engine.train.batched import CPU_MIN_STEP_MACS, MIN_STEP_MACS
        from engine.train.until import epoch_cap

        dd, tr = spec.data, spec.train
        self.spec = spec
        self.d = math.prod(image_shape(dd.name, dd.data_dir, dd.source_options()))
        self.n = dd.n_train
        self.ep = epoch_cap(tr)  # until = converged: the cap, an upper bound
        self.seeds = len(spec.seeds)
        self.kinds = len(spec.model.kinds)
        n = self.n
        self.batches = 1 if tr.optimizer == "gd" else math.ceil(n / min(tr.batch_size, n))
        self.big_n = n + dd.n_test
        self.cells = self.kinds * self.seeds
        self.trained: set[int] = set()
        # the seeds of one (kind, width) train side by side (``RunContext.plan_batches``)
        # when its step reaches ``MIN_STEP_MACS`` (batch × m × d: ``batched.worth_batching``;
        # on a CPU ``CPU_MIN_STEP_MACS``, never)
        self.step_batch = n if tr.optimizer == "gd" else min(tr.batch_size, n)
        self.chunks = math.ceil(self.seeds / tr.batch_networks)
        cpu = resolve_device(spec.device).type == "cpu"
        self.least = CPU_MIN_STEP_MACS if cpu else MIN_STEP_MACS
        self.n_fused = len(fused_kinds(spec))
        self.n_auto = self.kinds - self.n_fused
        self.stacks, self.per_stack = stack_chunks(self.seeds, tr.batch_networks)

    def together(self, w: int) -> bool:
        """Whether the seeds of width ``w`` train side by side (autograd kinds)."""
        multi = self.seeds > 1 and self.spec.train.batch_networks > 1
        return multi and self.step_batch * self.d * w >= self.least

    def seeded(
        self,
        per_width: float,
        widths: set[int] | tuple[int, ...],
        steps: float,
        fused_steps: float | None = None,
    ) -> Work:
        """Training at ``widths`` for every kind and seed: ``per_width`` × w FLOPs and
        ``steps`` steps per network and width (``fused_steps`` for a fused kind, default
        the same); the steps counted per (kind, width) group: the fused kinds' seeds
        always stacked, the autograd kinds' as ``together`` says. Each network updates
        its w·d first-layer weights (the output layer's w·K is ≤ 2 % of them at MNIST's
        d) once an optimiser step (``fused_steps``, default ``steps``)."""
        flops = sum(per_width * w for w in widths) * self.cells
        fast = [w for w in widths if self.together(w)]
        small = sum(per_width * w for w in fast) * self.seeds * self.n_auto
        groups = BATCHED_STEP * self.chunks * len(fast) + self.seeds * (len(widths) - len(fast))
        fs = steps if fused_steps is None else fused_steps
        fused: FusedSteps = ()
        if self.n_fused and widths:
            fused = ((self.per_stack, fs * self.stacks * len(widths) * self.n_fused),)
        updates = (steps if fused_steps is None else fused_steps) * self.cells
        updated = sum(w * self.d for w in widths) * updates
        alone = {w: self.cells - (self.seeds * self.n_auto if w in fast else 0) for w in widths}
        shaped = tuple(
            sorted(((self.step_batch, self.d, w), per_width * w * c) for w, c in alone.items() if c)
        )
        return Work(
            flops, steps * groups * self.n_auto, small, fused, updated=updated, shaped=shaped
        )

    def training(self, widths: set[int] | tuple[int, ...]) -> Work:
        """Training every kind and seed at those of ``widths`` no earlier experiment of
        the run trained."""
        new = set(widths) - self.trained
        self.trained.update(new)
        return self.seeded(4.0 * self.n * self.d * self.ep, new, float(self.ep * self.batches))

    def one_at_a_time(self, flops: float, steps: float) -> Work:
        """``flops`` and ``steps`` per network for every kind and seed, one network at a
        time: adversarial training and attacks. A fused kind's step there (closed-form
        input gradient, ``engine.models.closed_form``) is priced as a fused step of one
        network: on a tiny network (d 16, m 8, batch 16, 2 cores at load 10–11) a
        closed-form PGD step took 310–335 µs, a fused training step 300–350 µs, an
        autograd PGD step 600–660 µs."""
        fused: FusedSteps = ((1, steps * self.seeds * self.n_fused),) if self.n_fused else ()
        return Work(flops * self.cells, steps * self.seeds * self.n_auto, 0.0, fused)

    def attacks(self) -> Work:
        """The flip protocol's attacks (``flip`` and ``advtrain``): 4·n·d·m per attack
        step per ε, one network at a time."""
        fl = self.spec.flip
        steps = (1 + fl.pgd_steps + fl.mim_steps) * len(fl.eps)
        return self.one_at_a_time(4.0 * self.n * self.d * fl.width * steps, float(steps))

    def adversarial(self, flops: float, steps: float, k: int) -> Work:
        """Adversarial training: ``flops`` per network for every kind and seed, ``steps``
        training steps per network, each after ``k`` attack steps on the network's own
        mini-batch. A fused kind's seeds train stacked (``RunContext._train_together``),
        their attacks too (``engine.train.adversarial.perturb_stacked``): 1 + k stacked
        steps a chunk of seeds; an autograd kind's 1 + k passes are autograd steps, one
        network at a time. The FLOPs at ``ADV_OVERHEAD``; each training step updates the
        flip width's m·d first-layer weights of every network (``Work.updated``)."""
        fused: FusedSteps = ()
        if self.n_fused:
            fused = ((self.per_stack, steps * (1 + k) * self.stacks * self.n_fused),)
        total = flops * self.cells
        updated = self.spec.flip.width * self.d * steps * self.cells
        return Work(
            total,
            steps * (1 + k) * self.seeds * self.n_auto,
            0.0,
            fused,
            adversarial=total,
            updated=updated,
        )


Estimate = Callable[[Plan], Work]
"""An experiment's estimate (``registry.register(..., estimate=)``): the work it plans."""


def planned_work(spec: RunSpec) -> dict[str, Work]:
    """The work ``spec`` plans, per experiment (resolved through the registry, run order):
    each experiment's own estimate (registered with it, ``registry.register``) on one
    ``Plan`` of the spec, so networks two experiments share are counted once."""
    from engine.experiments.registry import select

    p = Plan(spec)
    return {e.name: e.estimate(p) for e in select(spec.experiment)}


BATCHED_OVERHEAD = OVERHEAD
"""Seconds ÷ FLOP floor of seeds trained side by side (on an accelerator only: on a CPU they
never are, ``engine.train.batched.CPU_MIN_STEP_MACS``): no gain assumed. Measured on the
CPU with 3 networks (MNIST n 500, ``bench_batched.py --parts flops --networks 3``):
batched / separate speed 1.01, 0.99, 0.93, 0.91 at m 64, 256, 1024, 4096 (load 2, median
of 3); not measured on a GPU (none was lent)."""
ADV_OVERHEAD = 1.8
"""Seconds ÷ FLOP floor of adversarial training's passes (``Work.adversarial``): each is
a thin [b, d] × [d, m] product per network (b = 32 on digits quick), below the square
matmul the probe times. ``python benchmarks/bench_fused_step.py --parts advstack`` (d 64,
b 32, 10 classes, 10-step PGD, 3 networks stacked; the probes taken beside each repeat)
in three runs on 2 cores at load 9–12 from other jobs: after the fused step's price, the
FLOPs took 2.85, 1.57, 1.77× the floor at m 256 and 2.25, 1.78, 1.64× at m 1024; this is
their median (``OVERHEAD``, 1.3, had priced them; docs/benchmarks-training.md)."""
BATCHED_STEP = 3.0
"""The fixed cost of one batched step (``engine.train.batched``: a vmapped step of a chunk of
networks, their statistics read) in separate steps: 2.5–3.4× at 1–41 tiny networks
(d 16, m 8) on 2 cores, so a chunk of B networks costs 3 steps where B separate ones cost
B. Measured again (``bench_batched.py --parts overhead``, load 8–9): 2.24, 2.61, 2.59,
3.15, 2.60 at B = 1, 2, 3, 8, 41: flat in B, so 3 seeds batched cost about what 3
separate steps do; the gain of batching seeds is in the FLOP rate (``BATCHED_OVERHEAD``)."""


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
