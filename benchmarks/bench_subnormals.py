"""Benchmark: Adam on a layer with always-zero input pixels, with and without flushing
subnormals to zero (``engine.device.flush_denormals``).

    python benchmarks/bench_subnormals.py [--m 4096] [--d 784] [--dead 0.28] [--steps 1200]

MNIST has pixels that are zero in every image (rank 564 < 784 in the data-scale subset), so
the data gradient of their weight columns is exactly zero and only the L2 penalty moves
them: Adam drives those weights (and its moments) to zero geometrically, through the
subnormal range (< 1.2e-38 in float32), where x86 arithmetic is an order of magnitude
slower. This script runs the fused Adam update (the trainer's
``engine.train.fused.stepper``, with the L2 penalty 1e-3 as weight decay) on a [m, d]
weight whose first ``dead`` share of columns gets zero data gradient, and times the update
over the first 20 steps and over 20 steps after ``steps`` more, once in the CPU's default
mode and once flushed, alternating, in one process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from engine.train.fused import stepper  # noqa: E402


def run(m: int, d: int, dead: float, steps: int, flush: bool) -> tuple[float, float]:
    """(ms per update over the first 20 steps, ms per update over 20 steps after ``steps``)."""
    torch.set_flush_denormal(flush)
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(1, m, d, generator=gen) * 0.01
    opt = torch.optim.Adam([w], lr=1e-3, weight_decay=1e-3, fused=True)  # the L2 penalty
    step = stepper(opt, [w])
    g = torch.randn(1, m, d, generator=gen) * 1e-3
    g[..., : int(dead * d)] = 0.0  # the always-zero pixels' columns

    def timed(k: int) -> float:
        t = time.perf_counter()
        for _ in range(k):
            step([g])
        return (time.perf_counter() - t) / k * 1e3

    early = timed(20)
    timed(steps)
    late = timed(20)
    torch.set_flush_denormal(False)
    return early, late


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--d", type=int, default=784)
    ap.add_argument("--dead", type=float, default=0.28)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    res: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for _ in range(a.repeat):
        for flush in (False, True):
            res[flush].append(run(a.m, a.d, a.dead, a.steps, flush))
    print(
        f"fused Adam on [{a.m}, {a.d}], {a.dead:.0%} of columns with zero gradient, "
        f"{torch.get_num_threads()} thread(s); ms per update (median of {a.repeat})"
    )
    print(f"{'mode':<10} {'first 20':>9} {'after ' + str(a.steps):>11}")
    for flush in (False, True):
        e = statistics.median(x for x, _ in res[flush])
        late = statistics.median(y for _, y in res[flush])
        print(f"{'flushed' if flush else 'default':<10} {e:9.1f} {late:11.1f}")
    lates = {f: statistics.median(y for _, y in res[f]) for f in res}
    print(
        f"after {a.steps} steps the default mode is {lates[False] / lates[True]:.1f}x the flushed one"
    )


if __name__ == "__main__":
    main()
