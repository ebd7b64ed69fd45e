"""This machine's probes, each timed in a fraction of a second and measured once a process:
what ``engine.experiments.estimate`` prices its planned work with (a FLOP rate, seconds a
step, a parameter update, a streamed element; docs/benchmarks.md#estimate)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable


def _per_call(fn: Callable[[], object], seconds: float) -> float:
    """Seconds per call of ``fn``, timed for about ``seconds`` after one warm-up call."""
    fn()
    t0 = time.perf_counter()
    reps = 0
    while time.perf_counter() - t0 < seconds:
        fn()
        reps += 1
    return (time.perf_counter() - t0) / max(reps, 1)


def probe_flops(seconds: float = 0.1) -> float:
    """This machine's float32 matmul FLOP/s, timed for about ``seconds`` ([512, 784] @ [784, 1024])."""
    import torch

    a = torch.randn(512, 784)
    b = torch.randn(784, 1024)
    return 2 * 512 * 784 * 1024 / _per_call(lambda: a @ b, seconds)


@functools.cache
def probe_stream_seconds(rows: int = 40, cols: int = 51_200, seconds: float = 0.05) -> float:
    """Seconds per float64 element of a vector update that streams through memory: the
    L-BFGS two-loop's ``vecdot`` and ``addcmul_`` on [rows, cols] tensors (16 MB each, the
    PBRF's history at its defaults, ``engine.influence.pbrf._lbfgs``), timed for about
    ``seconds``; measured once a process. Counted as 5 element passes per pair of calls
    (two reads for the dot product, two reads and a write for the update)."""
    import torch

    g = torch.Generator().manual_seed(0)
    s, y, q = (torch.randn(rows, cols, generator=g, dtype=torch.float64) for _ in range(3))

    def once() -> None:
        a = torch.linalg.vecdot(s, q) * 1e-9
        q.addcmul_(a[:, None], y, value=-1.0)

    return _per_call(once, seconds) / (5 * rows * cols)


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


@functools.cache
def probe_update_seconds(optimizer: str = "adam", seconds: float = 0.05) -> float:
    """Seconds per parameter of one optimiser update (``base.make_optimizer``'s Adam, or
    SGD for "sgd" and "gd", with L2; called as the fused step calls it, ``fused.stepper``;
    the autograd path runs the same kernel) on a [1024, 784] layer, larger than a core's
    cache as the layers it prices are; timed for about ``seconds`` after a warm-up,
    measured once a process per optimiser."""
    import torch

    from engine.run.spec import TrainSpec
    from engine.train.base import make_optimizer
    from engine.train.fused import stepper

    params = [torch.zeros(1024, 784)]
    grads = [torch.full_like(params[0], 1e-3)]
    cfg = TrainSpec(optimizer=optimizer, lr=1e-3, l2=1e-3)
    update = stepper(make_optimizer(params, cfg), params)
    return _per_call(lambda: update(grads), seconds) / params[0].numel()


@functools.cache
def probe_shape_flops(b: int, d: int, m: int, seconds: float = 0.03) -> float:
    """FLOP/s of a training step's five products at its shapes, float32, one network:
    [b, d]·[d, m] forward, [b, m]·[m, K] out, [b, K]·[K, m] back, [m, b]·[b, d] the
    weight gradient, [m, b]·[b, K] the output layer's (K 10); ``engine.train.fused``'s
    calls on a stack of one. Timed for about ``seconds`` after a warm-up, measured once
    a process per shape."""
    import torch

    k = 10
    g = torch.Generator().manual_seed(0)
    x, w = torch.rand(1, b, d, generator=g), torch.randn(1, m, d, generator=g)
    a, gk = torch.randn(1, m, k, generator=g), torch.randn(1, b, k, generator=g)
    h = torch.rand(1, b, m, generator=g)

    def once() -> None:
        torch.bmm(x, w.transpose(1, 2))
        torch.bmm(h, a)
        torch.bmm(gk, a.transpose(1, 2))
        torch.bmm(h.transpose(1, 2), x)
        torch.bmm(h.transpose(1, 2), gk)

    return 2.0 * b * m * (2 * d + 3 * k) / _per_call(once, seconds)
