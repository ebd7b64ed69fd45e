"""Benchmark: the one-thread rule for small training steps (``engine.train.loop.step_threads``).

    python benchmarks/bench_step_threads.py [--repeat 2] [--data-dir ../shared/data]

Times two sweeps in this process with the rule on (steps under ``SMALL_STEP_MACS`` on one
torch thread) and off (``SMALL_STEP_MACS = 0``: torch's default threads throughout),
interleaved so load hits both alike, after one untimed warm-up run: a 12-cell digits
``train`` sweep (3 vs 8, n_train 200, widths 16/64/256, 2 seeds, 200 epochs; every step
under the threshold) and, when ../shared/data/mnist is there, an MNIST sweep at m 1024 /
4096 (10 epochs; every step over it, so the rule must not matter). The load average is
printed: the rule pays most when another process holds a core.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# isort: off
import engine  # noqa: E402,F401  (first: it sets OMP_WAIT_POLICY before torch loads)
import torch  # noqa: E402

# isort: on
import engine.train.base as loop  # noqa: E402  (the rule's home: step_threads reads it there)
from engine.experiments import execute  # noqa: E402
from engine.run.spec import RunSpec  # noqa: E402


def timed(spec: RunSpec) -> float:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        execute(spec, Path(d) / "run")
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    a = ap.parse_args()
    base = RunSpec(experiment="train", seeds=(0, 1), device="cpu")
    cases = {
        "digits 12 cells, 200 epochs": base.replace(
            data__name="digits", data__classes=(3, 8), data__n_train=200, data__n_test=50,
            model__widths=(16, 64, 256), train__epochs=200,
        ),
    }  # fmt: skip
    mnist = Path(a.data_dir) / "mnist"
    if mnist.is_dir():
        cases["mnist m1024,4096, 10 epochs"] = base.replace(
            seeds=(0,), data__name="mnist", data__data_dir=str(mnist), data__classes=(3, 8),
            data__n_train=1000, data__n_test=50, model__widths=(1024, 4096), train__epochs=10,
        )  # fmt: skip
    rule = loop.SMALL_STEP_MACS
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")
    timed(next(iter(cases.values())).replace(train__epochs=2))  # warm-up, not timed
    for name, spec in cases.items():
        on, off = [], []
        for _ in range(a.repeat):
            loop.SMALL_STEP_MACS = rule
            on.append(timed(spec))
            loop.SMALL_STEP_MACS = 0
            off.append(timed(spec))
        loop.SMALL_STEP_MACS = rule
        fmt = " / ".join
        print(
            f"{name}: rule on {fmt(f'{t:.1f}' for t in on)} s, "
            f"off (default threads) {fmt(f'{t:.1f}' for t in off)} s"
        )
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
