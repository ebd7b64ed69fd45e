"""The work a spec plans, counted (``Plan`` → ``Work``), and the price of each unit.

Every experiment registers an estimate (``registry.register(..., estimate=)``): a
function of one ``Plan`` of the spec (its sizes, and how its networks train) returning
the ``Work`` it plans: dense FLOPs (training's by their step's shape), autograd steps,
fused steps by stack size, parameter updates, streamed elements. ``Work.seconds`` prices
them with the factors below and the probes' rates; ``engine.experiments.estimate`` sums
them over a run and times them on this machine (docs/benchmarks.md#estimate-runs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from engine.kinds import FUSED_KINDS
from engine.run.spec import RunSpec

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
AUTOGRAD_TWIN = 2.0
"""A linearized twin's step through autograd (``engine.ntk.Linearized``: a forward and a
JVP a pass) in its network's steps, FLOPs and fixed cost. Measured for the structured
twin of 2L-ReLU (batch 32, d 64 and 784, m 16–4096): 1.34–2.20×, median 1.49 (table in
docs/benchmarks-training.md#twins); kept at 2, the jvp twin of QKV-Attn not measured."""
FUSED_TWIN = 1.0
"""A linearized twin's fused step (``engine.train.fused``: its pattern x̃W₀ᵀ computed once
for every point by ``chunk.Chunk``, so the step runs a network step's two [b, d] × [d, m]
products) in its network's fused steps, FLOPs and fixed cost. Measured (the same
shapes, alone and 3 stacked): 0.96–1.24×, median 1.08 (d 64: 1.16, d 784: 1.04), the
rest the [b, m] gather of x̃W₀ᵀ and the mask (docs/benchmarks-training.md#twins)."""
NOMINAL_STREAM_S = 1e-9
NOMINAL_UPDATE_S = 1e-9
"""A 2-core CPU's stream and update probes (this project's CI class): ``Work.seconds``'
defaults, for shares that need no probe (ETA weights; ``estimate.NOMINAL_STEP_S``)."""


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
    ``train.engine = "fused"``) are ``Work.fused``: the seeds of both kinds at one width,
    and their twins, always stacked (``RunContext.plan_batches``, ``Trainer.stack_kinds``),
    one stacked step a chunk of those networks (``stacks`` of ``per_stack``;
    docs/benchmarks-training.md#kinds-stacked). For the autograd kinds, with ``train.batch_networks`` > 1 and several seeds,
    the seeds train side by side where ``worth_batching`` says so: their FLOPs are
    ``Work.batched`` and their steps ``BATCHED_STEP`` per chunk of seeds. Adversarial
    training of the fused kinds stacks their seeds, attacks included (``adversarial``: a
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
        # the fused kinds' networks of one width (every seed of both kinds) in one stack
        nets = max(1, self.seeds * self.n_fused)  # no fused kind: never read
        self.stacks, self.per_stack = stack_chunks(nets, tr.batch_networks)

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
        fused_per_width: float | None = None,
    ) -> Work:
        """Training at ``widths`` for every kind and seed: ``per_width`` × w FLOPs and
        ``steps`` steps per network and width (a fused kind's network: ``fused_per_width``
        and ``fused_steps``, each default the same); the steps counted per (kind, width)
        group: the fused kinds' seeds always stacked, the autograd kinds' as ``together``
        says (the fused kinds' networks of a width: ``stacks`` steps of ``per_stack``
        networks a step). Each network updates its w·d first-layer weights (the output layer's w·K is
        ≤ 2 % of them at MNIST's d) once an optimiser step (``fused_steps``, default
        ``steps``)."""
        fpw = per_width if fused_per_width is None else fused_per_width
        each = per_width * self.seeds * self.n_auto + fpw * self.seeds * self.n_fused
        flops = sum(widths) * each
        fast = [w for w in widths if self.together(w)]
        small = sum(per_width * w for w in fast) * self.seeds * self.n_auto
        groups = BATCHED_STEP * self.chunks * len(fast) + self.seeds * (len(widths) - len(fast))
        fs = steps if fused_steps is None else fused_steps
        fused: FusedSteps = ()
        if self.n_fused and widths:
            fused = ((self.per_stack, fs * self.stacks * len(widths)),)
        updated = sum(w * self.d for w in widths) * fs * self.cells
        # of the FLOPs, those of networks trained alone or fused-stacked, by their shape
        alone = {
            w: each - (per_width * self.seeds * self.n_auto if w in fast else 0) for w in widths
        }
        shaped = tuple(sorted(((self.step_batch, self.d, w), w * f) for w, f in alone.items() if f))
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
        mini-batch. The fused kinds' seeds train stacked, both kinds in one stack
        (``RunContext._train_together``), their attacks too
        (``engine.train.adversarial.perturb_stacked``): 1 + k stacked steps a chunk; an autograd kind's 1 + k passes are autograd steps, one
        network at a time. The FLOPs at ``ADV_OVERHEAD``; each training step updates the
        flip width's m·d first-layer weights of every network (``Work.updated``)."""
        fused: FusedSteps = ()
        if self.n_fused:
            fused = ((self.per_stack, steps * (1 + k) * self.stacks),)
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
