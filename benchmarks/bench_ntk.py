"""Timing of the NTK engine: structured vs Jacobian eNTK, analytic Θ∞, the NTK solve.

    python benchmarks/bench_ntk.py [--quick] [--skip-slow] [--device cpu] [--threads 2]
                                   [--gpu-scale]

Prints one table: median seconds over repeats and, for the eNTK, the max relative
difference |structured − jacobian|/max|jacobian| between the two methods. Not run by
pytest. Targets (CPU float32, 2 cores): structured n=1024, m=4096 ≤ 0.10 s; analytic
n=4096 ≲ 0.4 s; ridge solve n=4096 ≲ 0.34 s. ``--gpu-scale`` (``benchmarks/gpu_check.sh``):
structured eNTK, Θ∞ and the solve at n = 10,000 (m = 4096), no Jacobian.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from engine.models import TwoLayerNet, normalize_rows
from engine.ntk import analytic_ntk, empirical_ntk, kernel_regression

T = TypeVar("T")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_time(fn: Callable[[], T], repeats: int, device: torch.device) -> tuple[float, float, T]:
    """(median, minimum) seconds of ``fn`` over ``repeats`` runs after a warm-up, and its value."""
    out = fn()  # warm-up (also the value returned)
    _sync(device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    ap.add_argument(
        "--skip-slow", action="store_true", help="skip jacobian at n=1024, m=4096 (~1 min)"
    )
    ap.add_argument("--no-jacobian", action="store_true", help="time the structured path only")
    ap.add_argument(
        "--gpu-scale", action="store_true", help="n = 10,000 (eNTK m = 4096), structured only"
    )
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    ap.add_argument("--repeats", type=int, default=0, help="repeats per timing (0: 5, quick 3)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    dt = torch.float32
    reps = args.repeats or (3 if args.quick else 5)
    d = 784
    g = torch.Generator().manual_seed(0)
    rows: list[tuple[str, str, float, float, str]] = []
    nan = float("nan")

    entk_sizes = (
        [(256, 512)] if args.quick else [(256, 512), (256, 4096), (1024, 512), (1024, 4096)]
    )
    big = 10_000 if args.gpu_scale else 0
    if big:
        entk_sizes, args.no_jacobian = [(1024, 4096), (big, 4096)], True
    for n, m in entk_sizes:
        x = torch.rand(n, d, generator=g).to(dev, dt)
        net = TwoLayerNet(d, m, 1, seed=1, dtype=dt).to(dev)
        ts, ts_min, ks = median_time(partial(empirical_ntk, net, x, method="structured"), reps, dev)
        rows.append(("eNTK structured", f"n={n} m={m}", ts, ts_min, ""))
        if args.no_jacobian:
            continue
        if args.skip_slow and n == 1024 and m == 4096:
            rows.append(("eNTK jacobian", f"n={n} m={m}", nan, nan, "skipped (--skip-slow)"))
            continue
        jr = 1 if n * m > 256 * 512 else reps
        tj, tj_min, kj = median_time(partial(empirical_ntk, net, x, method="jacobian"), jr, dev)
        rel = float((ks - kj).abs().max() / kj.abs().max())
        note = f"max rel diff {rel:.2e}, {tj / ts:.0f}× slower"
        rows.append(("eNTK jacobian", f"n={n} m={m}", tj, tj_min, note))

    for n in [1024] if args.quick else [1024, 4096, *([big] if big else [])]:
        x = normalize_rows(torch.rand(n, d, generator=g)).to(dev, dt)
        ta, ta_min, _ = median_time(partial(analytic_ntk, x), reps, dev)
        rows.append(("analytic Θ∞", f"n={n}", ta, ta_min, ""))

    n_solve = 1024 if args.quick else (big or 4096)
    x = normalize_rows(torch.rand(n_solve + 500, d, generator=g)).to(dev, torch.float64)
    k_all = analytic_ntk(x)
    y = torch.randn(n_solve, generator=g, dtype=torch.float64).to(dev)
    for sdt in (torch.float32, torch.float64):
        k_tr = k_all[:n_solve, :n_solve].to(sdt)
        k_te = k_all[n_solve:, :n_solve].to(sdt)
        ys = y.to(sdt)
        tr, tr_min, _ = median_time(partial(kernel_regression, k_tr, k_te, ys, 1e-3), reps, dev)
        rows.append(
            ("ridge solve", f"n={n_solve} {str(sdt)[6:]}", tr, tr_min, "Cholesky, 500 test")
        )
    n_flow = n_solve // 2  # eigh is ~10× a Cholesky; keep the script short
    tf, tf_min, _ = median_time(
        lambda: kernel_regression(
            k_all[:n_flow, :n_flow],
            k_all[n_solve:, :n_flow],
            y[:n_flow],
            1e-3,
            method="flow",
            t=1e3,
        ),
        max(1, reps // 2),
        dev,
    )
    rows.append(("flow solve", f"n={n_flow} float64", tf, tf_min, "eigh, 500 test"))

    print(f"device={dev} dtype=float32 threads={torch.get_num_threads()} d={d} repeats={reps}")
    w = max(len(r[1]) for r in rows)
    print(f"{'what':<16} {'size':<{w}} {'median s':>10} {'min s':>9}  note")
    for what, size, t, tmin, note in rows:
        print(f"{what:<16} {size:<{w}} {t:>10.4f} {tmin:>9.4f}  {note}")


if __name__ == "__main__":
    main()
