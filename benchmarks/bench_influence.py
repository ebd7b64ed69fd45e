"""Benchmark: kernel-LOO influence (all n_train × n_test pairs) and CG influence per test point.

    python benchmarks/bench_influence.py [--quick] [--device cpu|cuda]

NTK-LOO: Θ∞ on random unit vectors (d = 784), float64, 100 test points, n_train ∈
{1000, 4000} (quick: {500, 1000}); the kernel build is not timed. Target: 4000 × 100
pairs under 1 s. CG: gradient influence of a TwoLayerNet (MSE, λ = 1e-2, float64),
reported per test point (quick: smaller net and fewer points).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from engine.influence import gradient_influence, ntk_loo_influence
from engine.models import TwoLayerNet, normalize_rows
from engine.ntk import analytic_ntk


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def _time(fn, dev: torch.device, repeats: int) -> float:
    fn()  # warm-up (allocations, kernels, lazy imports)
    _sync(dev)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(dev)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def bench_loo(n: int, n_test: int, dev: torch.device, repeats: int) -> float:
    g = torch.Generator().manual_seed(0)
    x = normalize_rows(torch.rand(n + n_test, 784, generator=g, dtype=torch.float64)).to(dev)
    k, kt = analytic_ntk(x[:n], x[:n]), analytic_ntk(x[n:], x[:n])
    y = torch.randint(0, 10, (n + n_test,), generator=g).to(dev)
    return _time(lambda: ntk_loo_influence(k, kt, y[:n], y[n:], 1e-3), dev, repeats)


def bench_cg(n: int, n_test: int, d: int, width: int, dev: torch.device) -> tuple[float, int]:
    g = torch.Generator().manual_seed(1)
    x = torch.rand(n + n_test, d, generator=g, dtype=torch.float64).to(dev)
    y = torch.sign(x[:, 0] - 0.5)
    net = TwoLayerNet(d, width, sigma_w=1.0, seed=0, dtype=torch.float64).to(dev)
    t = _time(
        lambda: gradient_influence(
            net, x[:n], y[:n], x[n:], y[n:], lam=1e-2, method="cg", cg_tol=1e-8
        ),
        dev,
        1,
    )
    return t / n_test, d * width


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    args = ap.parse_args()
    dev = torch.device(args.device)
    sizes = (500, 1000) if args.quick else (1000, 4000)
    print(f"device {dev}, torch threads {torch.get_num_threads()}")
    print(f"{'method':<10}{'n_train':>9}{'n_test':>8}{'params':>9}{'seconds':>12}")
    for n in sizes:
        s = bench_loo(n, 100, dev, 1 if args.quick else 3)
        print(f"{'ntk-loo':<10}{n:>9}{100:>8}{'-':>9}{s:>12.4f}  (all {n * 100} pairs)")
    n, nt, d, w = (200, 4, 64, 32) if args.quick else (1000, 10, 784, 64)
    s, p = bench_cg(n, nt, d, w, dev)
    print(f"{'cg':<10}{n:>9}{nt:>8}{p:>9}{s:>12.4f}  (per test point)")


if __name__ == "__main__":
    main()
