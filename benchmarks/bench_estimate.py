"""Benchmark: the run-time estimate (engine/experiments/estimate.py) against measured runs.

    python benchmarks/bench_estimate.py [--data-dir ../shared/data] [--only mnist]
                                        [--engine fused|autograd]

Runs seven small specs in this process, one after another (quick presets of train, flip,
landscape, advtrain and ntk on the embedded digits, and MNIST train sweeps at m 1024 /
4096, 10 epochs, at batch 128 and at the ``--scale data`` preset's batch 32, when
../shared/data/mnist is there), each timed against ``estimate_seconds`` with this
machine's probes taken right before it (training's FLOPs at their shapes' own rate,
``probe_shape_flops``). Prints the estimate without and with the optimiser's update term
(``Work.updated`` × ``probe_update_seconds``), the estimate with every cell stopping at
its first check (``first_check``: the lower bound under until = converged), measured wall
and CPU seconds, and measured wall / estimated (the goal: within ±35 %). About 3 minutes
on 2 cores.
"""

from __future__ import annotations

import argparse
import functools
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
    first_check,
    fused_probe,
    probe_flops,
    probe_shape_flops,
    probe_step_seconds,
    probe_stream_seconds,
    probe_update_seconds,
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
        mn = RunSpec(experiment="train", seeds=(0,)).replace(
            data__name="mnist", data__data_dir=str(mnist), model__widths=(1024, 4096),
            train__epochs=10,
        )  # fmt: skip
        cases["mnist train m1024,4096 10 epochs"] = mn
        cases["mnist train m1024,4096 b32 relu,attn"] = mn.replace(
            model__kinds=("relu", "attn"), train__batch_size=32, data__n_train=800, train__epochs=3
        )
    if a.only:
        keep = a.only.split(",")
        cases = {k: v for k, v in cases.items() if any(w in k for w in keep)}
    step = probe_step_seconds()
    print(f"step probe {1e3 * step:.2f} ms")
    print(
        f"{'spec':38} {'no upd. s':>9} {'estimate s':>10} {'1st chk s':>9} {'wall s':>7} "
        f"{'CPU s':>7} {'wall/est':>8}"
    )
    for name, spec in cases.items():
        spec = spec.replace(device="cpu", train__engine=a.engine)
        rate, stream = probe_flops(), probe_stream_seconds()
        priced = functools.partial(
            estimate_seconds, flops_per_s=rate, step_s=step, fused_s=fused_probe,
            stream_s=stream, shape_rate=probe_shape_flops,
        )  # fmt: skip
        bare = priced([spec], update_s=0.0)
        est = priced([spec], update_s=probe_update_seconds)
        low = priced([first_check(spec)], update_s=probe_update_seconds)
        with tempfile.TemporaryDirectory() as d:
            t0, c0 = time.perf_counter(), time.process_time()
            execute(spec, Path(d) / "run")
            t, c = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"{name:38} {bare:9.1f} {est:10.1f} {low:9.1f} {t:7.1f} {c:7.1f} {t / est:8.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
