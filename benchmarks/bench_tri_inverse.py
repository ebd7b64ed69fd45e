"""Benchmark: the kernel leave-one-out's triangular inverse L⁻¹ (``_tri_inverse`` in
engine/influence/kernel_loo.py) on the BLAS's default threads, on one BLAS thread (what the
engine uses), and torch's triangular solve against I, alternated in one process.

    python benchmarks/bench_tri_inverse.py [--sizes 228,300,1000,2000] [--rounds 3]

Run it once on an idle machine and once with the other core busy (e.g. beside a run): on a
2-core machine OpenBLAS's two threads wait on each other when one core is taken, which is
why the engine pins this call to one thread (docs/benchmarks.md#triangular-inverse).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from scipy.linalg import lapack
from threadpoolctl import threadpool_limits


def _ms(fn, reps: int) -> float:
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="228,300,1000,2000")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'n':>5} {'trtri, default threads':>23} {'trtri, 1 thread':>16} {'torch solve':>12}")
    for n in (int(s) for s in args.sizes.split(",")):
        a = rng.standard_normal((n, n))
        chol = np.linalg.cholesky(a @ a.T + n * np.eye(n))
        lt, eye = torch.from_numpy(chol), torch.eye(n, dtype=torch.float64)
        reps = max(3, 20000 // n)
        rows: list[list[float]] = [[], [], []]

        def trtri(c: np.ndarray = chol) -> object:
            return lapack.dtrtri(c, lower=1)

        def solve(lt: torch.Tensor = lt, eye: torch.Tensor = eye) -> object:
            return torch.linalg.solve_triangular(lt, eye, upper=False)

        for _ in range(args.rounds):  # alternated, so a change of load hits all three
            rows[0].append(_ms(trtri, reps))
            with threadpool_limits(limits=1, user_api="blas"):
                rows[1].append(_ms(trtri, reps))
            rows[2].append(_ms(solve, reps))
        med = [statistics.median(r) for r in rows]
        print(f"{n:>5} {med[0]:>20.2f} ms {med[1]:>13.2f} ms {med[2]:>9.2f} ms")


if __name__ == "__main__":
    main()
