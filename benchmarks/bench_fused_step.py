"""Benchmark: the closed-form (fused) training step against autograd, per network-step.

    python benchmarks/bench_fused_step.py [--parts step,throughput,floor,adam,pgd,advstack,twin] [--widths 16,64,256,1024]
                                          [--stacks 3,6] [--n 256] [--d 64] [--repeat 3]
                                          [--threads 2]
                                          [--device cpu|cuda]

* ``step``: 2L-ReLU (±1 targets, MSE, Adam, L2 1e-3, float32, CPU) on n points of d
  features, batch 32 and full batch, for each width: seconds per network-step of
  ``engine.train.train`` with ``train.engine = "autograd"`` (the reference), the same call
  with the fused step (B = 1), and ``engine.train.batched.train_batched`` of B networks
  in one fused step (its seconds ÷ B) for each B of ``--stacks``: 3 is what a run of the
  paper preset stacks (its three seeds; ``--quick`` has one seed, so B = 1 there).
  Interleaved, median of ``--repeat``, so load hits all alike; the ratios are against the autograd figure of the same run (goal,
  docs/benchmarks-training.md: fused B = 6 ≥ 5× autograd at m ≤ 256). MLP-Attn trains the
  same head on its fixed features, so its step costs the same.
* ``throughput``: the training FLOP rate at large width (MNIST's shape: d 784, n 500,
  batch 128; the forward X̃Wᵀ and the weight gradient, 4·b·d·m a step) of the fused
  trainer (B = 1) and of the autograd one, against ``engine.experiments.estimate``'s
  matmul probe measured in the same run: what ``work.OVERHEAD`` stands for.
* ``pgd``: adversarial training's perturbation (``engine.train.adversarial``, PGD of 10
  steps, ε 0.3) of one mini-batch of 32 (10 classes, d ``--d``, the quick preset's flip
  width 256, centred inputs), for 2L-ReLU and MLP-Attn: milliseconds with the closed-form
  input gradient (``engine="fused"``, ``engine.models.closed_form``) and through autograd,
  interleaved, median of ``--repeat``, and their ratio.
* ``advstack``: a pass (an attack step or the training step) of adversarial training
  with 3 networks stacked (``engine.train.adversarial.perturb_stacked``; 10-step PGD,
  batch 32, 10 classes, d ``--d``) per width, against the estimate's price of it: a
  stacked fused step (``probe_step_seconds("fused", 3)``) plus the pass's FLOPs at
  ``work.ADV_OVERHEAD`` × the matmul probe's rate, both probes taken beside each
  repeat; prints what multiple of the FLOP floor the FLOPs took.
* ``floor``: where a fused step's time goes at large width (MNIST's shape: d 784, n 800,
  10 classes, Adam, L2; batch 32 and full batch; ``--big-widths``): seconds a step of
  ``engine.train.train`` (B = 1), against three references timed in the same run,
  interleaved, on the same clock (``--clock``: wall, or this process's CPU time, which a
  loaded machine's other jobs do not inflate): the matmul probe's rate
  (``estimate.probe_flops``' [512, 784] × [784, 1024]); the step's own matmul floor (its
  five products of the same shapes alone, what no step can beat); and the optimiser's
  update of the same parameters alone (fused Adam, ``fused.stepper``: memory-bound, no
  FLOPs counted). Prints the step's FLOP rate ÷ the probe, the step ÷ its matmul floor,
  and the share of the step the update takes.
* ``twin``: a linearized twin's training step (``engine.ntk.Linearized``, structured, of
  the same 2L-ReLU; fixed ±1 output layer as the run's default, 10 classes, CE, Adam,
  L2) against its network's, per network-step, alone (B = 1) and ``--stacks``' first B
  stacked, fused and (B = 1) autograd, for d ``--d`` and 784 at ``--big-widths`` and
  ``--widths``, batch 32. Timed from the end of the first epoch to the end of the last
  (setup and the twin's once-computed pattern x̃W₀ᵀ left out: a run amortises them over
  its epochs), network and twin alternated, median of ``--repeat``, on ``--clock``. Prints the twin's
  time ÷ its network's: what ``engine.experiments.ntk.ntk_work`` charges a twin.
* ``adam``: one update of fused Adam on a [3, 1024, 64] stack (the kernel both paths run,
  called as the fused step calls it, ``engine.train.fused.stepper``): µs and ns a parameter.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# isort: off
import engine  # noqa: E402,F401  (first: it sets OMP_WAIT_POLICY before torch loads)
import torch  # noqa: E402

# isort: on
from engine.experiments.estimate import probe_flops  # noqa: E402
from engine.models import MLPAttn, TwoLayerNet  # noqa: E402
from engine.run.spec import TrainSpec  # noqa: E402
from engine.train import fused, train  # noqa: E402
from engine.train.base import make_optimizer  # noqa: E402
from engine.train.batched import train_batched  # noqa: E402

DEVICE = torch.device("cpu")


def _data(n: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, d, generator=g)
    return x.to(DEVICE), torch.where(x[:, 0] > x[:, 1], 1.0, -1.0).to(DEVICE)


def _sync() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def _cfg(engine_: str, bs: int, epochs: int) -> TrainSpec:
    return TrainSpec(lr=1e-3, epochs=epochs, batch_size=bs, l2=1e-3, engine=engine_)


def _time_one(x: torch.Tensor, y: torch.Tensor, m: int, cfg: TrainSpec) -> float:
    net = TwoLayerNet(x.shape[1], m, seed=1).to(DEVICE)
    _sync()
    t0 = time.perf_counter()
    for _ in train(net, x, y, cfg, generator=torch.Generator().manual_seed(1)):
        pass
    _sync()
    return time.perf_counter() - t0


def _time_stack(x: torch.Tensor, y: torch.Tensor, m: int, cfg: TrainSpec, b: int) -> float:
    nets = [TwoLayerNet(x.shape[1], m, seed=s).to(DEVICE) for s in range(b)]
    gens = [torch.Generator().manual_seed(s) for s in range(b)]
    _sync()
    t0 = time.perf_counter()
    for _ in train_batched(nets, x, y, cfg, generators=gens):
        pass
    _sync()
    return time.perf_counter() - t0


def step_part(widths: list[int], stacks: list[int], n: int, d: int, repeat: int) -> None:
    x, y = _data(n, d)
    print(f"per network-step, ms (2L-ReLU, n {n}, d {d}, Adam, float32); x: autograd ÷ path")
    head = "".join(f"{f'fused B={b}':>14}" for b in [1, *stacks])
    print(f"{'m':>5} {'batch':>5} {'autograd':>9}{head}")
    for m in widths:
        for bs in (32, n):
            steps_per_epoch = -(-n // bs)
            epochs = max(2, -(-60 // steps_per_epoch))
            steps = epochs * steps_per_epoch
            runs: dict[int, list[float]] = {b: [] for b in [0, 1, *stacks]}  # 0: autograd
            auto, fus = _cfg("autograd", bs, epochs), _cfg("fused", bs, epochs)
            _time_one(x, y, m, auto), _time_one(x, y, m, fus)  # warm-up
            for _ in range(repeat):
                runs[0].append(_time_one(x, y, m, auto) / steps)
                runs[1].append(_time_one(x, y, m, fus) / steps)
                for b in stacks:
                    runs[b].append(_time_stack(x, y, m, fus, b) / (steps * b))
            ms = {b: statistics.median(v) * 1e3 for b, v in runs.items()}
            a = ms[0]
            cols = "".join(f" {ms[b]:>7.3f} {a / ms[b]:>5.1f}x" for b in [1, *stacks])
            print(f"{m:>5} {bs:>5} {a:>9.3f}{cols}", flush=True)


def throughput_part(widths: list[int], repeat: int) -> None:
    n, d, bs = 500, 784, 128
    x, y = _data(n, d)
    print(f"training FLOP rate ÷ matmul probe (2L-ReLU, n {n}, d {d}, batch {bs}, Adam)")
    print(f"{'m':>5} {'probe GF/s':>10} {'fused':>14} {'autograd':>14}")
    for m in widths:
        epochs = 3
        flops = 4.0 * n * d * m * epochs
        fus, auto = _cfg("fused", bs, epochs), _cfg("autograd", bs, epochs)
        _time_one(x, y, m, fus)
        probes, rf, ra = [], [], []
        for _ in range(repeat):
            probes.append(probe_flops(0.2))
            rf.append(flops / _time_one(x, y, m, fus))
            ra.append(flops / _time_one(x, y, m, auto))
        p, f, a = (statistics.median(v) for v in (probes, rf, ra))
        print(
            f"{m:>5} {p / 1e9:>10.1f} {f / 1e9:>6.1f} {f / p:>6.2f}x "
            f"{a / 1e9:>6.1f} {a / p:>6.2f}x",
            flush=True,
        )


def _clock(kind: str) -> Callable[[], float]:
    return time.process_time if kind == "cpu" else time.perf_counter


def _rate(clock: Callable[[], float], f: Callable[[], object], flops: float, reps: int) -> float:
    """FLOP/s of ``f`` (``flops`` each call) over ``reps`` calls after one warm-up."""
    f()
    t0 = clock()
    for _ in range(reps):
        f()
    return reps * flops / (clock() - t0)


def floor_part(widths: list[int], repeat: int, clock_kind: str, n: int = 800) -> None:
    """A fused step at large width against the matmul probe, its own matmuls and its update."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, 784, generator=g).to(DEVICE)
    y = torch.randint(0, 10, (n,), generator=g).to(DEVICE)
    print(f"fused step vs references (2L-ReLU, n {n}, d 784, 10 classes, Adam, clock {clock_kind})")
    print(
        f"{'m':>5} {'batch':>5} {'step ms':>8} {'probe GF/s':>10} {'rate/probe':>10} "
        f"{'step/mm':>7} {'update':>6}"
    )
    for m in widths:
        for bs in (32, n):
            t, probe, mm, upd, flops = _floor_row(x, y, m, bs, repeat, _clock(clock_kind))
            print(
                f"{m:>5} {bs:>5} {t * 1e3:>8.3f} {probe / 1e9:>10.1f} "
                f"{flops / t / probe:>10.2f} {t / mm:>7.2f} {upd / t:>6.2f}",
                flush=True,
            )


def _floor_row(
    x: torch.Tensor, y: torch.Tensor, m: int, bs: int, repeat: int, clock: Callable[[], float]
) -> tuple[float, float, float, float, float]:
    """(step s, probe FLOP/s, the step's matmuls s, its update s, its FLOPs), medians."""
    n, d = x.shape
    k = 10
    epochs = -(-12 // -(-n // bs))  # 12 steps at least: a run's setup spread thin
    cfg = _cfg("fused", bs, epochs)
    xb, w = torch.rand(1, bs, d, device=DEVICE), torch.randn(1, m, d, device=DEVICE)
    a, gk = torch.randn(1, m, k, device=DEVICE), torch.randn(1, bs, k, device=DEVICE)
    h = torch.rand(1, bs, m, device=DEVICE)
    pa, pb = torch.randn(512, 784, device=DEVICE), torch.randn(784, 1024, device=DEVICE)

    def matmuls() -> None:  # the step's five products, its shapes
        torch.bmm(xb, w.transpose(1, 2))
        torch.bmm(h, a)
        torch.bmm(gk, a.transpose(1, 2))
        torch.bmm(h.transpose(1, 2), xb)
        torch.bmm(h.transpose(1, 2), gk)

    params = [torch.zeros(1, m, d, device=DEVICE), torch.zeros(1, m, k, device=DEVICE)]
    grads = [torch.randn_like(p) * 1e-3 for p in params]
    update = fused.stepper(make_optimizer(params, cfg), params)

    def one_step() -> float:
        net = TwoLayerNet(d, m, k, seed=1).to(DEVICE)
        gen = torch.Generator().manual_seed(1)
        _sync()
        t0 = clock()
        for _ in train(net, x, y, cfg, generator=gen):
            pass
        _sync()
        return (clock() - t0) / (epochs * -(-n // bs))

    flops = 4.0 * bs * d * m + 6.0 * bs * m * k
    reps = max(2, int(3e8 / flops))
    one_step()
    rows = []
    for _ in range(repeat):
        probe = _rate(clock, lambda: pa @ pb, 2.0 * 512 * 784 * 1024, 20)
        mm = flops / _rate(clock, matmuls, flops, reps)
        upd = 1.0 / _rate(clock, lambda: update(grads), 1.0, reps)
        rows.append((one_step(), probe, mm, upd))
    t, probe, mm, upd = (statistics.median(r[i] for r in rows) for i in range(4))
    return t, probe, mm, upd, flops


def adam_part(repeat: int, steps: int = 200) -> None:
    params = [torch.randn(3, 1024, 64, device=DEVICE)]
    grads = [torch.randn_like(params[0])]
    update = fused.stepper(make_optimizer(params, _cfg("fused", 32, 1)), params)
    update(grads)  # warm-up
    times = []
    for _ in range(repeat):
        _sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            update(grads)
        _sync()
        times.append((time.perf_counter() - t0) / steps)
    t = statistics.median(times)
    n = params[0].numel()
    print(
        f"fused Adam on [3, 1024, 64] ({n} parameters): {t * 1e6:.0f} µs, {t / n * 1e9:.2f} ns each"
    )


def pgd_part(d: int, repeat: int, width: int = 256, calls: int = 100) -> None:
    from engine.train.adversarial import make_perturb

    g = torch.Generator().manual_seed(0)
    x = torch.rand(300, d, generator=g).to(DEVICE)
    y = torch.randint(0, 10, (300,), generator=g).to(DEVICE)
    mu = x.mean(0)
    xb, yb = x[:32], y[:32]
    for kind in ("relu", "attn"):
        if kind == "relu":
            net: torch.nn.Module = TwoLayerNet(d, width, 10, input_shift=mu)
        else:
            net = MLPAttn(x - mu, width, 10, input_shift=mu)
        net = net.to(DEVICE)
        times: dict[str, list[float]] = {"fused": [], "autograd": []}
        for _ in range(repeat):
            for eng in times:
                perturb = make_perturb("pgd", 0.3, 10, None, engine=eng)
                perturb(net, xb, yb)  # warm-up
                _sync()
                t0 = time.perf_counter()
                for _ in range(calls):
                    perturb(net, xb, yb)
                _sync()
                times[eng].append((time.perf_counter() - t0) / calls)
        f, a = (statistics.median(times[k]) for k in ("fused", "autograd"))
        print(
            f"PGD-10 batch 32, {kind} m={width}: fused {f * 1e3:.2f} ms, "
            f"autograd {a * 1e3:.2f} ms ({a / f:.2f}x)",
            flush=True,
        )


def advstack_part(widths: list[int], d: int, repeat: int, b: int = 3, k: int = 10) -> None:
    """A pass of stacked adversarial training (``b`` networks, ``k``-step PGD, batch 32,
    10 classes) against the estimate's price of it (``work.ADV_OVERHEAD``)."""
    from engine.experiments.estimate import probe_step_seconds
    from engine.experiments.work import ADV_OVERHEAD
    from engine.train.adversarial import make_perturb

    n, bs = 96, 32
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, d, generator=g).to(DEVICE)
    y = torch.randint(0, 10, (n,), generator=g).to(DEVICE)
    for m in widths:
        rows = []
        for _ in range(repeat + 1):  # the first: a warm-up
            rate, fused_s = probe_flops(), probe_step_seconds.__wrapped__("fused", b)
            nets = [TwoLayerNet(d, m, 10, seed=s).to(DEVICE) for s in range(b)]
            gens = [torch.Generator().manual_seed(s) for s in range(b)]
            per = [make_perturb("pgd", 0.3, k, None, generator=q) for q in gens]
            _sync()
            t0 = time.perf_counter()
            for _ in train_batched(
                nets,
                torch.stack([x] * b),
                torch.stack([y] * b),
                _cfg("fused", bs, 2),
                generators=[torch.Generator() for _ in nets],
                perturbs=per,
            ):
                pass
            _sync()
            took = (time.perf_counter() - t0) / (2 * (n // bs) * (1 + k))
            flop_s = b * 6.0 * bs * d * m / rate  # the pass's FLOP floor
            rows.append((took, fused_s, flop_s, (took - fused_s) / flop_s))
        took, fused_s, flop_s, over = (statistics.median(r[i] for r in rows[1:]) for i in range(4))
        price = fused_s + ADV_OVERHEAD * flop_s
        print(
            f"adversarial pass of {b}, m={m}: {took * 1e6:.0f} us; fused step {fused_s * 1e6:.0f} us"
            f" + FLOP floor {flop_s * 1e6:.0f} us: FLOPs at {over:.2f}x the floor "
            f"(ADV_OVERHEAD {ADV_OVERHEAD}); measured / priced {took / price:.2f}",
            flush=True,
        )


def _per_step(
    make: Callable[[int], torch.nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainSpec,
    b: int,
    clock: Callable[[], float],
) -> float:
    """Seconds per network-step of ``b`` networks ``make(seed)`` (``train`` alone when b is 1,
    else ``train_batched``), from the first epoch's end to the last's."""
    nets = [make(s).to(DEVICE) for s in range(b)]
    if b == 1:
        it: Any = train(nets[0], x, y, cfg, generator=torch.Generator().manual_seed(1))
    else:
        gens = [torch.Generator().manual_seed(s) for s in range(b)]
        it = train_batched(nets, x, y, cfg, generators=gens)
    marks = []
    for _ in it:
        _sync()
        marks.append(clock())
    steps = (len(marks) - 1) * -(-x.shape[0] // cfg.batch_size)
    return (marks[-1] - marks[0]) / (steps * b)


def twin_part(
    widths: list[int], ds: list[int], stack: int, repeat: int, clock_kind: str, n: int = 256
) -> None:
    """A linearized twin's step against its network's (``ntk_work``'s price of a twin)."""
    from engine.ntk.linearized import Linearized

    bs, k = 32, 10
    clock = _clock(clock_kind)
    print(
        f"twin ÷ network, per network-step (2L-ReLU, n {n}, batch {bs}, {k} classes, Adam, "
        f"clock {clock_kind})"
    )
    print(f"{'d':>4} {'m':>5} {'path':>9} {'network ms':>10} {'twin ms':>8} {'twin/net':>8}")
    for d in ds:
        g = torch.Generator().manual_seed(0)
        x = torch.rand(n, d, generator=g).to(DEVICE)
        y = torch.randint(0, k, (n,), generator=g).to(DEVICE)
        for m in widths:
            # ≥ 1 GFLOP a run, at least 3 epochs timed, at most 300 steps
            steps = min(300, max(3 * -(-n // bs), int(1e9 / (4.0 * bs * d * m))))
            epochs = 1 + -(-steps // -(-n // bs))

            def net(s: int, m: int = m, d: int = d) -> torch.nn.Module:
                return TwoLayerNet(d, m, k, seed=s)

            def twin(s: int, m: int = m, d: int = d) -> torch.nn.Module:
                return Linearized(TwoLayerNet(d, m, k, seed=s))

            for path, b in (("fused", 1), ("fused", stack), ("autograd", 1)):
                cfg = _cfg(path, bs, epochs)
                _per_step(twin, x, y, cfg, b, clock)  # warm-up
                rows = [
                    (_per_step(net, x, y, cfg, b, clock), _per_step(twin, x, y, cfg, b, clock))
                    for _ in range(repeat)
                ]
                tn, tt = (statistics.median(r[i] for r in rows) for i in range(2))
                ratios = sorted(t / n_ for n_, t in rows)
                print(
                    f"{d:>4} {m:>5} {f'{path} B={b}':>9} {tn * 1e3:>10.3f} {tt * 1e3:>8.3f} "
                    f"{statistics.median(ratios):>8.2f} ({ratios[0]:.2f}–{ratios[-1]:.2f})",
                    flush=True,
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="step,throughput")
    ap.add_argument("--widths", default="16,64,256,1024")
    ap.add_argument("--big-widths", default="1024,4096")
    ap.add_argument("--stacks", default="3,6", help="networks stacked in one fused step")
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (the probe stays on the CPU)")
    ap.add_argument("--clock", default="wall", help="floor: wall or cpu (this process's CPU time)")
    args = ap.parse_args()
    global DEVICE
    DEVICE = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    parts = args.parts.split(",")
    if "step" in parts:
        widths, stacks = ([int(v) for v in a.split(",")] for a in (args.widths, args.stacks))
        step_part(widths, stacks, args.n, args.d, args.repeat)
    if "throughput" in parts:
        throughput_part([int(w) for w in args.big_widths.split(",")], args.repeat)
    if "floor" in parts:
        floor_part([int(w) for w in args.big_widths.split(",")], args.repeat, args.clock)
    if "adam" in parts:
        adam_part(args.repeat)
    if "pgd" in parts:
        pgd_part(args.d, args.repeat)
    if "twin" in parts:
        widths = sorted({int(w) for w in f"{args.widths},{args.big_widths}".split(",")})
        stack = int(args.stacks.split(",")[0])
        twin_part(widths, sorted({args.d, 784}), stack, args.repeat, args.clock)
    if "advstack" in parts:
        advstack_part([int(w) for w in args.widths.split(",")], args.d, args.repeat)


if __name__ == "__main__":
    main()
