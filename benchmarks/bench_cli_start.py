"""Benchmark: how long ``malleability`` takes to start for commands that need no tensor.

    python benchmarks/bench_cli_start.py [--repeat 5]

Times whole processes (start, import, print, exit), the median of ``--repeat`` runs each,
beside ``python -c pass`` measured in the same run as the reference (what this machine
charges for any Python process). The goal (issue #26): every command here within 0.5 s.
Each command runs on an empty runs folder (``$MALLEABILITY_RUNS`` in a temporary folder),
so ``runs list`` times the command, not a listing of many runs. Beside the wall time, the
process's CPU time (user + system, its children's included): on a machine shared with
other jobs the wall time is stretched by the load (printed before and after), the CPU
time much less, so it says what the command itself costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 0.5
COMMANDS = (
    ["--help"],
    ["headless", "--help"],
    ["reproduce", "--help"],
    ["experiments"],
    ["data", "list"],
    ["runs", "list"],
    ["report", "--help"],
    ["figures", "--help"],
    ["export", "--help"],
)


def seconds(argv: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of ``repeat`` runs of ``argv`` (output discarded)."""
    import resource

    walls, cpus = [], []
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as runs:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MALLEABILITY_RUNS": runs}
        env["COLUMNS"] = "80"
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"load average before: {load} on {os.cpu_count()} cores")
        ref, ref_cpu = seconds([sys.executable, "-c", "pass"], env, args.repeat)
        print(f"{'':<34} {'wall':>7} {'':>11} {'CPU':>7}")
        print(f"{'python -c pass (reference)':<34} {ref:6.3f} s {'':>11} {ref_cpu:6.3f} s")
        worst = worst_cpu = 0.0
        for cmd in COMMANDS:
            argv = [sys.executable, "-m", "malleability_tui.cli.main", *cmd]
            t, cpu = seconds(argv, env, args.repeat)
            worst, worst_cpu = max(worst, t), max(worst_cpu, cpu)
            print(
                f"{'malleability ' + ' '.join(cmd):<34} {t:6.3f} s ({t - ref:+.3f} s) {cpu:6.3f} s"
            )
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    verdict = "met" if worst <= GOAL_S else "missed"
    print(
        f"slowest {worst:.3f} s wall ({worst_cpu:.3f} s CPU); goal {GOAL_S} s wall: {verdict} "
        f"(median of {args.repeat})"
    )


if __name__ == "__main__":
    main()
