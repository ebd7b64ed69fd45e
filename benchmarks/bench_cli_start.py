"""Benchmark: how long ``malleability`` takes to start for commands that need no tensor.

    python benchmarks/bench_cli_start.py [--repeat 5]

Times whole processes (start, import, print, exit), the median of ``--repeat`` runs each,
beside ``python -c pass`` measured in the same run as the reference (what this machine
charges for any Python process). The goal (issue #26): every command here within 0.5 s.
Each command runs on an empty runs folder (``$MALLEABILITY_RUNS`` in a temporary folder),
so ``runs list`` times the command, not a listing of many runs.
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


def seconds(argv: list[str], env: dict[str, str], repeat: int) -> float:
    """Median wall-clock seconds of ``repeat`` runs of ``argv`` (output discarded)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as runs:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MALLEABILITY_RUNS": runs}
        env["COLUMNS"] = "80"
        ref = seconds([sys.executable, "-c", "pass"], env, args.repeat)
        print(f"{'python -c pass (reference)':<34} {ref:6.3f} s")
        worst = 0.0
        for cmd in COMMANDS:
            argv = [sys.executable, "-m", "malleability_tui.cli.main", *cmd]
            t = seconds(argv, env, args.repeat)
            worst = max(worst, t)
            print(f"{'malleability ' + ' '.join(cmd):<34} {t:6.3f} s  ({t - ref:+.3f} s)")
    verdict = "met" if worst <= GOAL_S else "missed"
    print(f"slowest {worst:.3f} s; goal {GOAL_S} s: {verdict} (median of {args.repeat})")


if __name__ == "__main__":
    main()
