"""Benchmark: the run-time estimate (engine/experiments/estimate.py) against measured runs.

    python benchmarks/bench_estimate.py [--data-dir ../shared/data] [--only mnist]
                                        [--engine fused|autograd]

Runs six small specs in this process, one after another (quick presets of train, flip,
landscape, advtrain and ntk on the embedded digits, and an MNIST train sweep at m 1024 /
4096, 10 epochs, when ../shared/data/mnist is there), each timed against
``estimate_seconds`` with this machine's probes taken right before it. Prints estimate,
measured seconds and measured / estimated (the estimate aims at a factor of two either
way). About 2 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# isort: off
import engine  # noqa: E402,F401  (first: it sets OMP_WAIT_POLICY before torch loads)

# isort: on
from engine.experiments import execute  # noqa: E402
from engine.experiments.estimate import (  # noqa: E402
    estimate_seconds,
    fused_probe,
    probe_flops,
    probe_step_seconds,
    probe_stream_seconds,
)
from engine.reproduce.presets import apply_quick  # noqa: E402
from engine.run.spec import RunSpec  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--only", default="", help="run the cases whose name holds one of these")
    ap.add_argument("--engine", default="fused", help="train.engine: fused or autograd")
    a = ap.parse_args()
    cases = {
        f"digits quick {e}": apply_quick(RunSpec(experiment=e))
        for e in ("train", "flip", "landscape", "advtrain", "ntk")
    }
    mnist = Path(a.data_dir) / "mnist"
    if mnist.is_dir():
        cases["mnist train m1024,4096 10 epochs"] = RunSpec(experiment="train", seeds=(0,)).replace(
            data__name="mnist", data__data_dir=str(mnist), model__widths=(1024, 4096),
            train__epochs=10,
        )  # fmt: skip
    if a.only:
        keep = a.only.split(",")
        cases = {k: v for k, v in cases.items() if any(w in k for w in keep)}
    step = probe_step_seconds()
    print(f"step probe {1e3 * step:.2f} ms")
    print(f"{'spec':34} {'estimate s':>10} {'measured s':>10} {'measured/est':>12}")
    for name, spec in cases.items():
        spec = spec.replace(device="cpu", train__engine=a.engine)
        est = estimate_seconds(
            [spec],
            flops_per_s=probe_flops(),
            step_s=step,
            fused_s=fused_probe,
            stream_s=probe_stream_seconds(),
        )
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            execute(spec, Path(d) / "run")
            t = time.perf_counter() - t0
        print(f"{name:34} {est:10.1f} {t:10.1f} {t / est:12.2f}", flush=True)


if __name__ == "__main__":
    main()
