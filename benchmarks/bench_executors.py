"""In-process vs ``--executor ray`` on a 12-cell sweep, and the plan's projected time on N nodes.

    python benchmarks/bench_executors.py [--epochs 20] [--nodes 1,2,4,8] [--cpus-per-node 2]

The sweep is ``train`` on digits 3 vs 8 (n_train 200): 2 models × widths 16,64,256 ×
seeds 0,1 = 12 small cells, dominated by per-step overhead. Prints wall times (Ray's
start-up included, and without it), their ratio, and the projected time of the same
plan on N nodes: measured per-cell seconds (train.csv ``seconds``, from the Ray run)
packed longest-first onto N × cpus-per-node slots (list scheduling, one cell per CPU,
no transfer or scheduling cost), plus the measured start-up: a projection, not a
measurement. The load average is printed too: on a shared machine the times move.
"""

from __future__ import annotations

import argparse
import csv
import heapq
import os
import tempfile
import time
from pathlib import Path

from engine.experiments import run
from engine.run.spec import RunSpec
from engine.run.store import RunStore


def sweep(epochs: int) -> RunSpec:
    return RunSpec(experiment="train", seeds=(0, 1), device="cpu").replace(
        data__name="digits", data__classes=(3, 8), data__n_train=200, data__n_test=50,
        model__widths=(16, 64, 256), train__epochs=epochs,
    )  # fmt: skip


def timed(spec: RunSpec, out: Path) -> tuple[float, list[dict[str, str]]]:
    store = RunStore(out, spec)
    t0 = time.perf_counter()
    for ev in run(spec):
        store.write(ev)
    wall = time.perf_counter() - t0
    with open(out / "train.csv", newline="") as f:
        return wall, list(csv.DictReader(f))


def max_diff(a: list[dict[str, str]], b: list[dict[str, str]]) -> float:
    """Largest |difference| of the loss and accuracy columns, row by row (plan order)."""
    cols = ("train_loss", "train_accuracy", "test_loss", "test_accuracy")
    assert [(r["model"], r["width"], r["seed"]) for r in a] == [
        (r["model"], r["width"], r["seed"]) for r in b
    ], "rows not in the same order"
    return max(abs(float(r[c]) - float(s[c])) for r, s in zip(a, b) for c in cols)


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

    from engine.run.executors.ray import LOCAL_RAY_CONFIG

    spec = sweep(a.epochs)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        local, local_rows = timed(spec, Path(tmp) / "local")
        t0 = time.perf_counter()
        ray.init(
            num_cpus=os.cpu_count() or 1,
            include_dashboard=False,
            log_to_driver=False,
            _system_config=LOCAL_RAY_CONFIG,
        )
        startup = time.perf_counter() - t0
        remote, ray_rows = timed(spec.replace(executor__kind="ray"), Path(tmp) / "ray")
        ray.shutdown()
    cells = [float(r["seconds"]) for r in ray_rows]
    local_cells = [float(r["seconds"]) for r in local_rows]
    print(
        f"12-cell train sweep, {a.epochs} epochs, {os.cpu_count()} cores, "
        f"load average {load0:.1f} → {os.getloadavg()[0]:.1f}"
    )
    print("| run | wall time | vs in-process |")
    print("| --- | --- | --- |")
    print(f"| in-process | {local:.1f} s | 1.00× |")
    print(f"| `--executor ray`, Ray already up | {remote:.1f} s | {local / remote:.2f}× |")
    print(
        f"| `--executor ray`, Ray start-up ({startup:.1f} s) included | {remote + startup:.1f} s "
        f"| {local / (remote + startup):.2f}× |"
    )
    print(
        f"rows equal: max |difference| of losses and accuracies {max_diff(local_rows, ray_rows):.1e}"
    )
    print(
        f"cell seconds: in-process sum {sum(local_cells):.1f}, max {max(local_cells):.1f}; "
        f"on Ray sum {sum(cells):.1f}, max {max(cells):.1f}"
    )
    print("projection (not measured) from the cell seconds on Ray, longest first:")
    print("| nodes × CPUs | projected wall time |")
    print("| --- | --- |")
    for n in (int(x) for x in a.nodes.split(",")):
        t = makespan(cells, n * a.cpus_per_node)
        print(f"| {n} × {a.cpus_per_node} | {t + startup:.1f} s ({t:.1f} s of cells + start-up) |")


if __name__ == "__main__":
    main()
