"""Run-time estimates from planned work: FLOPs and steps of a spec, timed against this machine.

One model for every front end: ``malleability reproduce --dry-run`` prints it, the TUI asks
for confirmation before a run it puts over ten minutes and weights its ETA by it. Coarse
by design (a factor of about two either way). Two terms, each timed here by a probe:

* the dense matmuls of training, attacks, landscape evaluations and kernels, at the
  rate of a float32 matmul (``probe_flops``) times ``OVERHEAD``: the FLOP floor;
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

import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.run.spec import RunSpec

OVERHEAD = 1.3
"""Seconds ÷ FLOP floor of the dense work at large width: ``benchmarks/bench_train.py``
reaches 0.68–0.77 of its matmul probe at m 256–1024 (CIFAR-10, 2 cores)."""
PER_RUN_SECONDS = 2.0
"""Fixed cost of a run: data loading, spectra, summaries."""
NOMINAL_FLOPS_PER_S = 8e10
NOMINAL_STEP_S = 6e-4
"""A 2-core CPU's probes (this project's CI class), for shares that need no probe (ETA weights)."""
CONFIRM_SECONDS = 600.0
"""The TUI asks before starting a run estimated over this (ten minutes)."""


def probe_flops(seconds: float = 0.1) -> float:
    """This machine's float32 matmul FLOP/s, timed for about ``seconds`` ([512, 784] @ [784, 1024])."""
    import torch

    a = torch.randn(512, 784)
    b = torch.randn(784, 1024)
    a @ b  # warm-up
    t0 = time.perf_counter()
    reps = 0
    while time.perf_counter() - t0 < seconds:
        a @ b
        reps += 1
    return reps * 2 * 512 * 784 * 1024 / (time.perf_counter() - t0)


@functools.cache
def probe_step_seconds(engine: str = "autograd", networks: int = 1) -> float:
    """Seconds of one step of the real training loop (Adam, the loss read every step) on
    networks too small for their FLOPs to count (d 16, m 8, batch 16), after one warm-up
    epoch; measured once a process per argument (about 0.05 s). ``engine``: "autograd"
    (``engine.train.train`` with ``train.engine = "autograd"``) or "fused" (the closed-form
    step, ``networks`` of them stacked in one ``engine.train.batched`` step: the seconds
    of that stacked step)."""
    import torch

    from engine.models import TwoLayerNet
    from engine.run.spec import TrainSpec
    from engine.train import train
    from engine.train.batched import train_batched

    x = torch.rand(64, 16, generator=torch.Generator().manual_seed(0))
    y = torch.where(x[:, 0] > 0.5, 1.0, -1.0)

    def run(epochs: int) -> float:
        cfg = TrainSpec(epochs=epochs, batch_size=16, engine=engine)
        nets = [TwoLayerNet(16, 8, 1, seed=s) for s in range(networks)]
        t0 = time.perf_counter()
        if engine == "fused" and networks > 1:
            gens = [torch.Generator() for _ in nets]
            for _ in train_batched(nets, x, y, cfg, generators=gens):
                pass
        else:
            for _ in train(nets[0], x, y, cfg, generator=torch.Generator()):
                pass
        return time.perf_counter() - t0

    run(1)
    epochs = 10
    return run(epochs) / (epochs * 4)


FusedSteps = tuple[tuple[int, float], ...]
"""Fused steps by stack size: ((B, steps of B networks stacked), ...), sorted by B."""


def _merge(a: FusedSteps, b: FusedSteps) -> FusedSteps:
    out: dict[int, float] = dict(a)
    for k, v in b:
        out[k] = out.get(k, 0.0) + v
    return tuple(sorted(out.items()))


@dataclass(frozen=True)
class Work:
    """The planned work of one experiment: dense FLOPs (``batched``: those of them trained
    side by side through autograd, ``engine.train.batched``), passes that each cost an
    autograd step (``steps``), and fused steps by stack size (``fused``)."""

    flops: float = 0.0
    steps: float = 0.0
    batched: float = 0.0
    fused: FusedSteps = ()
    adversarial: float = 0.0
    """Of ``flops``, adversarial training's, priced at ``ADV_OVERHEAD``."""

    def __add__(self, other: Work) -> Work:
        return Work(
            self.flops + other.flops,
            self.steps + other.steps,
            self.batched + other.batched,
            _merge(self.fused, other.fused),
            self.adversarial + other.adversarial,
        )

    @property
    def all_steps(self) -> float:
        """Steps of either path (a stacked fused step counted once)."""
        return self.steps + sum(v for _, v in self.fused)

    def seconds(
        self, flops_per_s: float, step_s: float, fused_s: Callable[[int], float] | None = None
    ) -> float:
        """Estimated seconds: ``OVERHEAD`` × the FLOP floor (``BATCHED_OVERHEAD`` for the
        batched FLOPs, ``ADV_OVERHEAD`` for the adversarial ones), plus ``steps`` × ``step_s``, plus each stack size's fused steps ×
        ``fused_s(B)`` (None: ``step_s``)."""
        alone = OVERHEAD * (self.flops - self.batched - self.adversarial) / flops_per_s
        alone += ADV_OVERHEAD * self.adversarial / flops_per_s + self.steps * step_s
        alone += sum(v * (fused_s(b) if fused_s else step_s) for b, v in self.fused)
        return alone + BATCHED_OVERHEAD * self.batched / flops_per_s if self.batched else alone


def fused_kinds(spec: RunSpec) -> set[str]:
    """The model kinds of ``spec`` that train with the fused step (``engine.train.fused``:
    2L-ReLU and MLP-Attn, unless ``train.engine`` is autograd)."""
    if spec.train.engine != "fused":
        return set()
    return {k for k in spec.model.kinds if k in FUSED_KINDS}


FUSED_KINDS = ("relu", "attn")
"""The kinds ``engine.train.fused.plan`` accepts (QKV-Attn trains its attention)."""


def _stack(nets: int, batch_networks: int) -> tuple[int, int]:
    """(chunks, networks a chunk) of ``nets`` networks in even chunks of at most
    ``batch_networks`` (``engine.train.batched.train_batched``)."""
    chunks = math.ceil(nets / max(1, batch_networks))
    return chunks, math.ceil(nets / chunks)


def planned_work(spec: RunSpec) -> dict[str, Work]:
    """The work ``spec`` plans, per experiment (resolved through the registry, run order).

    FLOPs. Training: 4·n·d·m per epoch per model × width × seed (the forward X̃Wᵀ and the
    weight gradient; the first layer's input is fixed, so no input gradient), counted
    once under the first experiment that trains those widths (``train``, ``ntk``,
    ``flip`` and ``landscape`` share models of the same width, as the run does); ``ntk``
    also trains each cell's linearized twin (twice a training step);
    adversarial training: 6·n·d·m per pass, (1 + ``flip.adv_training_steps()``) passes a
    step; flips: 4·n·d·m per attack step per ε; landscape: 2·n·d·m per surface point and
    4·n·d·m per Hessian-vector product; kernels: 2·N²·(d + m) per eNTK of N = n_train +
    n_test rows and n³ per solve or eigendecomposition (``ntk``: two eNTKs and Θ∞ per
    cell; ``spectrum``: the SVD of the n×d Gram factor and three n×n eigendecompositions
    on at most ``MAX_KERNEL_N`` rows, per data set, counted twice for float64).

    Steps of the fused kinds (``fused_kinds``: 2L-ReLU and MLP-Attn under
    ``train.engine = "fused"``) are ``Work.fused``: the seeds of one (kind, width), and
    their twins, always stacked (``RunContext.plan_batches``), one stacked step a chunk of
    seeds. For the autograd kinds, with ``train.batch_networks`` > 1 and several seeds,
    the seeds train side by side where ``worth_batching`` says so: their FLOPs are
    ``Work.batched`` and their steps ``BATCHED_STEP`` per chunk of seeds. Adversarial
    training of a fused kind stacks its seeds, attacks included (``adversarial``: a
    stacked fused step a pass, its FLOPs at ``ADV_OVERHEAD``); the attacks of flip, and
    every autograd kind's adversarial passes, run one network at a time: a fused kind's
    attack steps as fused steps of one network, the others' as autograd steps; landscape
    passes are autograd steps.

    Epochs are ``train.max_epochs`` under ``train.until = "converged"`` (the estimate is
    then an upper bound). Steps: optimiser steps (epochs × mini-batches; full-batch GD one an epoch), attack
    steps and evaluation passes, each with the loop's fixed cost.
    """
    from engine.data import image_shape
    from engine.experiments.registry import select
    from engine.train.until import epoch_cap

    exps = [e.name for e in select(spec.experiment)]
    d = math.prod(image_shape(spec.data.name, spec.data.data_dir, spec.data.source_options()))
    n, ep, seeds, kinds = (
        spec.data.n_train,
        epoch_cap(spec.train),  # until = converged: the cap, an upper bound
        len(spec.seeds),
        len(spec.model.kinds),
    )
    batches = 1 if spec.train.optimizer == "gd" else math.ceil(n / min(spec.train.batch_size, n))
    big_n = n + spec.data.n_test
    fl, la = spec.flip, spec.landscape
    cells = kinds * seeds
    out: dict[str, Work] = {}
    trained: set[int] = set()

    # the seeds of one (kind, width) train side by side (``RunContext.plan_batches``) when
    # its step reaches ``MIN_STEP_MACS`` (batch × m × d: ``batched.worth_batching``; on a
    # CPU ``CPU_MIN_STEP_MACS``, never)
    from engine.device import resolve_device
    from engine.train.batched import CPU_MIN_STEP_MACS, MIN_STEP_MACS

    step_batch = n if spec.train.optimizer == "gd" else min(spec.train.batch_size, n)
    chunks = math.ceil(seeds / spec.train.batch_networks)
    cpu = resolve_device(spec.device).type == "cpu"
    least = CPU_MIN_STEP_MACS if cpu else MIN_STEP_MACS

    def together(w: int) -> bool:
        multi = seeds > 1 and spec.train.batch_networks > 1
        return multi and step_batch * d * w >= least

    n_fused = len(fused_kinds(spec))
    n_auto = kinds - n_fused
    stacks, per_stack = _stack(seeds, spec.train.batch_networks)

    def seeded(
        per_width: float,
        widths: set[int] | tuple[int, ...],
        steps: float,
        fused_steps: float | None = None,
    ) -> Work:
        """Training at ``widths`` for every kind and seed: ``per_width`` × w FLOPs and
        ``steps`` steps per network and width (``fused_steps`` for a fused kind, default
        the same); the steps counted per (kind, width) group: the fused kinds' seeds
        always stacked, the autograd kinds' as ``together`` says."""
        flops = sum(per_width * w for w in widths) * cells
        fast = [w for w in widths if together(w)]
        small = sum(per_width * w for w in fast) * seeds * n_auto
        groups = BATCHED_STEP * chunks * len(fast) + seeds * (len(widths) - len(fast))
        fs = steps if fused_steps is None else fused_steps
        fused: FusedSteps = (
            ((per_stack, fs * stacks * len(widths) * n_fused),) if n_fused and widths else ()
        )
        return Work(flops, steps * groups * n_auto, small, fused)

    def training(widths: set[int]) -> Work:
        new = widths - trained
        trained.update(new)
        return seeded(4.0 * n * d * ep, new, float(ep * batches))

    def one_at_a_time(flops: float, steps: float) -> Work:
        """``flops`` and ``steps`` per network for every kind and seed, one network at a
        time: adversarial training and attacks. A fused kind's step there (closed-form
        input gradient, ``engine.models.closed_form``) is priced as a fused step of one
        network: on a tiny network (d 16, m 8, batch 16, 2 cores at load 10–11) a
        closed-form PGD step took 310–335 µs, a fused training step 300–350 µs, an
        autograd PGD step 600–660 µs."""
        fused: FusedSteps = ((1, steps * seeds * n_fused),) if n_fused else ()
        return Work(flops * cells, steps * seeds * n_auto, 0.0, fused)

    def adversarial(flops: float, steps: float, k: int) -> Work:
        """Adversarial training: ``flops`` per network for every kind and seed, ``steps``
        training steps per network, each after ``k`` attack steps on the network's own
        mini-batch. A fused kind's seeds train stacked (``Trainer._train_together``), their
        attacks too (``engine.train.adversarial.perturb_stacked``): 1 + k stacked steps a
        chunk of seeds; an autograd kind's 1 + k passes are autograd steps, one network
        at a time. The FLOPs at ``ADV_OVERHEAD``."""
        fused: FusedSteps = ()
        if n_fused:
            fused = ((per_stack, steps * (1 + k) * stacks * n_fused),)
        total = flops * cells
        return Work(total, steps * (1 + k) * seeds * n_auto, 0.0, fused, total)

    attack_steps = (1 + fl.pgd_steps + fl.mim_steps) * len(fl.eps)
    attacks = one_at_a_time(4.0 * n * d * fl.width * attack_steps, float(attack_steps))
    for name in exps:
        w = Work()
        if name in ("train", "ntk"):
            w += training(set(spec.model.widths))
        if name == "ntk":
            kernels = sum(2 * 2.0 * big_n**2 * (d + m) + 2 * big_n**3 for m in spec.model.widths)
            w += Work(kernels * cells)
            # the linearized twin of every cell: f₀ + J·Δθ costs a forward and a JVP a
            # pass, about twice a training step of the network, in FLOPs and fixed cost
            # (fused: one more matmul, the pattern x̃W₀ᵀ; the fixed cost of a step)
            w += seeded(
                2 * 4.0 * n * d * ep, spec.model.widths, 2.0 * ep * batches, float(ep * batches)
            )
        if name == "flip":
            w += training({fl.width}) + attacks
        if name == "advtrain":
            k = fl.adv_training_steps()
            w += adversarial(6.0 * n * d * fl.width * ep * (1 + k), float(ep * batches), k)
            w += attacks
        if name == "landscape":
            points = la.points_1d + la.points_2d**2
            hvps = la.hessian_iters + la.hutchinson_samples
            w += training({la.width})
            w += Work(
                (2.0 * points + 4.0 * hvps) * n * d * la.width * cells,
                float((points + hvps) * cells),
            )
        if name == "influence_check":
            w += influence_check_work(spec, d)
        if name == "kappa_sweep":
            w += kappa_sweep_work(spec)
        if name == "spectrum":
            from engine.experiments.spectrum import MAX_KERNEL_N

            k = min(n, MAX_KERNEL_N)
            per_set = 2.0 * (4.0 * n * d * min(n, d) + 3 * 9.0 * k**3)
            w += Work(per_set * (1 + len(spec.spectrum.datasets)))
        out[name] = w
    return out


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


def kappa_sweep_work(spec: RunSpec) -> Work:
    """``kappa_sweep``: at each centring fraction, the ``ntk`` and ``flip`` work of that
    point's spec (``kappa_sweep.point_spec``: its own sizes, one attack), the flip's
    networks shared with the ntk cells as the run shares them; the spectra are seconds."""
    from engine.experiments.kappa_sweep import point_spec

    w = Work()
    for alpha in spec.kappa.fractions:
        for part in planned_work(point_spec(spec, alpha)).values():
            w += part
    return w


def influence_check_work(spec: RunSpec, d: int) -> Work:
    """``influence_check``: per model and seed, the network on its own subset
    (``influence_check.n_train``), its eNTKs and solves, and (top + random + 1) retrainings
    per batch order (two with the noise floor): their FLOPs as training's, their steps
    per chunk of ``train.batch_networks`` networks (``BATCHED_STEP`` each; 1: one a
    network)."""
    from engine.train.until import epoch_cap

    ic, tr = spec.influence_check, spec.train
    n, m, ep = ic.n_train, ic.width, epoch_cap(tr)
    batches = 1 if tr.optimizer == "gd" else math.ceil(n / min(tr.batch_size, n))
    cells = len(spec.model.kinds) * len(spec.seeds)
    nets = (ic.top + ic.random + 1) * (2 if ic.noise_floor else 1)
    nets *= ic.truth != "pbrf"  # the PBRF truth retrains nothing
    # the PBRF (pbrf_steps, and twice that for its floor): per L-BFGS step about two
    # forward-backward passes of the k networks in the span of the n training features
    pbrf_steps = ic.pbrf_steps * (3 if ic.noise_floor else 1) * (ic.truth != "retrain")
    pbrf = 2 * 6.0 * (ic.top + ic.random) * n * min(n, d) * m * pbrf_steps
    big_n = n + ic.n_test
    kernels = 2 * 2.0 * big_n**2 * (d + m) + 3.0 * n**3
    one = 4.0 * n * d * m * ep
    if tr.batch_networks > 1:
        chunks = math.ceil(nets / tr.batch_networks)
        steps = BATCHED_STEP * chunks * ep * batches
    else:
        steps = float(nets * ep * batches)
    seeds = len(spec.seeds)
    n_fused = len(fused_kinds(spec))
    n_auto = len(spec.model.kinds) - n_fused
    flops = ((1 + nets) * one + kernels + pbrf) * cells
    if not n_fused:
        return Work(flops, (ep * batches + steps + pbrf_steps) * cells)
    # fused kinds: the cell's network alone, then its retrainings (if any) in even chunks;
    # the PBRF's solver steps are autograd passes whatever trained the network
    fused: FusedSteps = ((1, ep * batches * seeds * n_fused),)
    if nets:
        chunks, per = _stack(nets, tr.batch_networks)
        fused = _merge(fused, ((per, chunks * ep * batches * seeds * n_fused),))
    return Work(flops, (ep * batches + steps) * seeds * n_auto + pbrf_steps * cells, 0.0, fused)


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
) -> float:
    """Estimated wall seconds of running every spec of ``specs`` on this machine.

    ``flops_per_s``: the machine's matmul rate (default: ``probe_flops()``, 0.1 s);
    ``step_s``: the autograd loop's cost a step (default: ``probe_step_seconds()``);
    ``fused_s(B)``: a fused step of B stacked networks (default: ``step_s`` when that is
    given, else ``probe_step_seconds("fused", B)``).
    """
    return sum(
        ln.estimate_s
        for ln in breakdown(
            [("", s) for s in specs], flops_per_s=flops_per_s, step_s=step_s, fused_s=fused_s
        )
    )


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
) -> list[PlanLine]:
    """The time budget of ``runs`` ((name, spec) pairs) line by line: each experiment of
    each run, then one ``(fixed)`` line of ``PER_RUN_SECONDS`` per run; the estimates add
    up to ``estimate_seconds`` of the same specs and machine (``fused_s``: as there)."""
    rate = flops_per_s if flops_per_s is not None else probe_flops()
    if fused_s is None and step_s is None:
        fused_s = fused_probe
    step = step_s if step_s is not None else probe_step_seconds()
    lines = [
        PlanLine(
            name,
            exp,
            w.flops,
            w.flops / rate,
            w.all_steps,
            w.seconds(rate, step, fused_s),
            w.all_steps - w.steps,
        )
        for name, spec in runs
        for exp, w in planned_work(spec).items()
    ]
    fixed = PER_RUN_SECONDS * len(runs)
    return [*lines, PlanLine("(all)", "(fixed: data, spectra, summaries)", 0.0, 0.0, 0.0, fixed)]
