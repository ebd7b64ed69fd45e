"""In-process vs ``--executor ray`` on a 12-cell sweep, and the plan's projected time on N nodes.

    python benchmarks/bench_executors.py [--epochs 20] [--nodes 1,2,4,8] [--cpus-per-node 2]

The sweep is ``train`` on digits 3 vs 8 (n_train 200): 2 models × widths 16,64,256 ×
seeds 0,1 = 12 small cells, dominated by per-step overhead. Prints wall times (Ray's
start-up included, and without it), their ratio, and the projected time of the same
plan on N nodes: measured per-cell seconds (train.csv ``seconds``, from the Ray run)
packed longest-first onto N × cpus-per-node slots, plus the measured start-up.
"""

from __future__ import annotations

import argparse
import csv
import heapq
import tempfile
import time
from pathlib import Path

from engine.experiments import run
from engine.experiments.spec import RunSpec
from engine.experiments.store import RunStore


def sweep(epochs: int) -> RunSpec:
    return RunSpec(experiment="train", seeds=(0, 1), device="cpu").replace(
        data__name="digits", data__classes=(3, 8), data__n_train=200, data__n_test=50,
        model__widths=(16, 64, 256), train__epochs=epochs,
    )  # fmt: skip


def timed(spec: RunSpec, out: Path) -> tuple[float, list[float]]:
    store = RunStore(out, spec)
    t0 = time.perf_counter()
    for ev in run(spec):
        store.write(ev)
    wall = time.perf_counter() - t0
    with open(out / "train.csv", newline="") as f:
        return wall, [float(r["seconds"]) for r in csv.DictReader(f)]


def makespan(cells: list[float], slots: int) -> float:
    """Longest-processing-time-first schedule of ``cells`` on ``slots`` workers."""
    heap = [0.0] * slots
    for c in sorted(cells, reverse=True):
        heapq.heappush(heap, heapq.heappop(heap) + c)
    return max(heap)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--nodes", default="1,2,4,8")
    ap.add_argument("--cpus-per-node", type=int, default=2)
    a = ap.parse_args()
    import ray

    spec = sweep(a.epochs)
    with tempfile.TemporaryDirectory() as tmp:
        local, _ = timed(spec, Path(tmp) / "local")
        t0 = time.perf_counter()
        ray.init(include_dashboard=False, log_to_driver=False)
        startup = time.perf_counter() - t0
        remote, cells = timed(spec.replace(executor__kind="ray"), Path(tmp) / "ray")
        ray.shutdown()
    print(
        f"12-cell sweep, {a.epochs} epochs: in-process {local:.1f} s; ray {remote:.1f} s "
        f"(+ {startup:.1f} s Ray start-up); speed-up {local / remote:.2f}× "
        f"({local / (remote + startup):.2f}× with start-up)"
    )
    print(f"cell seconds on Ray: sum {sum(cells):.1f}, max {max(cells):.1f}")
    for n in (int(x) for x in a.nodes.split(",")):
        t = makespan(cells, n * a.cpus_per_node)
        print(
            f"projected on {n} node(s) × {a.cpus_per_node} CPUs: {t + startup:.1f} s "
            f"({t:.1f} s of cells + start-up)"
        )


if __name__ == "__main__":
    main()
