"""Timing of QKV-Attn's exact eNTK (attention + head) on MNIST, vs MLP-Attn's in the same run.

    python benchmarks/bench_qkv_ntk.py [--n 256] [--width 1024] [--d-k 0] [--threads 2]

Goal (issue 17): n = 256 MNIST images (d = 784, d_k = d, so P = 3·784² + m·784 ≈ 2.6M
parameters at m = 1024) in ≤ 10 s on 2 CPU cores, float32. Prints the median seconds of
the structured QKV kernel, of MLP-Attn's structured kernel (the reference, same n and
m), their ratio, and the relative difference to torch.func Jacobians on a small subset
in float64 (an n × P Jacobian at n = 256 would need ~5 GB). Uses ../shared/data/mnist
when present, else random unit-norm inputs (said in the output). Not run by pytest.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from engine.models import MLPAttn, QKVAttn
from engine.ntk import empirical_ntk, jacobian_ntk

MNIST = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "mnist"


def _inputs(n: int, n_context: int) -> tuple[torch.Tensor, torch.Tensor, str]:
    if MNIST.is_dir():
        from engine.data import load_dataset

        ds = load_dataset("mnist", root=str(MNIST), n_train=n_context, n_test=10, seed=0)
        return ds.x_train_raw[:n], ds.x_train_raw, f"MNIST ({MNIST.resolve()})"
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n_context, 784, generator=g)
    return x[:n], x, "random inputs (MNIST not found)"


def _median(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256, help="points of the n×n kernel")
    ap.add_argument("--width", type=int, default=1024, help="hidden width m of the head")
    ap.add_argument("--d-k", type=int, default=0, help="projection width (0: d_k = d)")
    ap.add_argument("--context", type=int, default=1000, help="training points in C")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--check-n", type=int, default=8, help="points of the Jacobian cross-check")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    x, ctx, source = _inputs(a.n, a.context)
    qkv = QKVAttn(ctx, a.width, d_k=a.d_k or None, seed=0)
    ref = MLPAttn(ctx, a.width, seed=0)
    n_params = sum(p.numel() for p in qkv.parameters() if p.requires_grad)
    t_qkv = _median(lambda: empirical_ntk(qkv, x), a.repeats)
    t_ref = _median(lambda: empirical_ntk(ref, x), a.repeats)
    q64 = QKVAttn(ctx.double(), 64, d_k=a.d_k or None, seed=0, dtype=torch.float64)
    xs = x[: a.check_n].double()
    t0 = time.perf_counter()
    jac = jacobian_ntk(q64, xs)
    t_jac = time.perf_counter() - t0
    err = float((empirical_ntk(q64, xs) - jac).abs().max() / jac.abs().max())
    print(f"data: {source}; n={a.n}, d={x.shape[1]}, d_k={qkv.d_k}, m={a.width}, P={n_params:,}")
    print(f"threads: {a.threads} (the machine may be shared: absolute times are upper bounds)")
    print(f"QKV-Attn structured eNTK   {t_qkv:8.3f} s   (goal ≤ 10 s)")
    print(f"MLP-Attn structured eNTK   {t_ref:8.3f} s   (reference, same n, m)")
    print(f"ratio QKV / MLP-Attn       {t_qkv / t_ref:8.1f}×")
    print(
        f"torch.func Jacobian check  n={a.check_n}, m=64, float64: max rel diff {err:.2e} "
        f"({t_jac:.2f} s)"
    )


if __name__ == "__main__":
    main()
