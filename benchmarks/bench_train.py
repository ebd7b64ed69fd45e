"""Benchmark: training cells, MLP-Attn against 2L-ReLU, and the achieved FLOP rate.

    python benchmarks/bench_train.py [--dataset cifar10|mnist] [--widths 64,256,1024,4096]
                                     [--n-train 500] [--epochs 10] [--threads 2] [--repeat 3]

For each width, in the same process and interleaved (so load hits both alike):

* the wall time of one training cell (``engine.train.train``: Adam, batch 128, L2 1e-3,
  the run's fixed-features path) for 2L-ReLU and for MLP-Attn, median of ``--repeat``;
  the ratio MLP-Attn / 2L-ReLU (goal, issue #16: ≤ 1.3 at small width on CIFAR-10:
  MLP-Attn's C x̂ is computed once per cell, not per step);
* the achieved training FLOP rate: the cell's matmul FLOPs (forward X̃Wᵀ and the weight
  gradient, 2·2·b·d·m per step; the ±1 head and Adam's element-wise update are not
  counted) over its seconds, against a probe that times the same two matmuls of the same
  shapes back to back in the same run (goal ≥ 0.6 for m ≥ 1024).

Data: ../shared/data/<dataset> (the test split is enough: train and test are carved from
it), two classes (CIFAR-10 1 vs 0, MNIST 3 vs 8), float32, CPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# isort: off
import engine  # noqa: E402,F401  (first: it sets OMP_WAIT_POLICY before torch loads)
import torch  # noqa: E402

# isort: on
from engine.data import load_dataset  # noqa: E402
from engine.models import build_model  # noqa: E402
from engine.run.spec import TrainSpec  # noqa: E402
from engine.train import train  # noqa: E402

CLASSES = {"cifar10": (1, 0), "mnist": (3, 8)}


def cell_seconds(kind: str, ds, width: int, cfg: TrainSpec) -> float:
    """Wall seconds of one training cell (model build included, as a run does it)."""
    x = ds.x_train_raw.to(torch.float32)
    y = ds.y_train.to(torch.float32)
    t0 = time.perf_counter()
    model = build_model(kind, ds.x_train.to(torch.float32), width, ds.n_out, seed=0)
    for _ in train(model, x, y, cfg, generator=torch.Generator().manual_seed(0)):
        pass
    return time.perf_counter() - t0


def probe_seconds(n: int, d: int, m: int, bs: int, epochs: int) -> float:
    """The two matmuls of every step (forward, weight gradient), same shapes, timed."""
    xb = torch.randn(bs, d)
    w = torch.randn(m, d)
    g = torch.randn(bs, m)
    steps = epochs * -(-n // bs)
    t0 = time.perf_counter()
    for _ in range(steps):
        h = xb @ w.T
        gw = g.T @ xb
    del h, gw
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="cifar10", choices=sorted(CLASSES))
    ap.add_argument("--widths", default="64,256,1024,4096")
    ap.add_argument("--n-train", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    root = ROOT / ".." / "shared" / "data" / a.dataset
    ds = load_dataset(
        a.dataset, root=root, classes=CLASSES[a.dataset], n_train=a.n_train, n_test=100, seed=0
    )
    cfg = TrainSpec(epochs=a.epochs)
    n, d, bs = ds.n_train, ds.d, cfg.batch_size
    print(
        f"{a.dataset} {CLASSES[a.dataset]}, n_train {n}, d {d}, {a.epochs} epochs, batch {bs}, "
        f"{a.threads} threads, median of {a.repeat}"
    )
    print(
        f"{'width':>6} {'2L-ReLU s':>10} {'MLP-Attn s':>11} {'Attn/ReLU':>10} "
        f"{'GFLOP/s':>8} {'probe':>8} {'rate/probe':>10}"
    )
    for m in (int(w) for w in a.widths.split(",")):
        relu, attn, probe = [], [], []
        for _ in range(a.repeat):  # interleaved: the same load for all three
            relu.append(cell_seconds("relu", ds, m, cfg))
            attn.append(cell_seconds("attn", ds, m, cfg))
            probe.append(probe_seconds(n, d, m, bs, a.epochs))
        r, t, p = statistics.median(relu), statistics.median(attn), statistics.median(probe)
        flops = 4.0 * n * d * m * a.epochs
        print(
            f"{m:>6} {r:>10.3f} {t:>11.3f} {t / r:>10.2f} {flops / r / 1e9:>8.1f} "
            f"{flops / p / 1e9:>8.1f} {p / r:>10.2f}"
        )


if __name__ == "__main__":
    main()
