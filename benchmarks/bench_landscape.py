"""Time the loss-landscape tools on MNIST-sized data.

    python benchmarks/bench_landscape.py [--quick] [--n 1000] [--width 1024] [--threads 2]

Models: 2L-ReLU and MLP-Attn (784 → m → 10, cross-entropy), float32 on the CPU,
untrained (the cost does not depend on the weights). Inputs: the first n MNIST
test images from ../shared/data/mnist when present, else uniform random pixels.
Rows: the 21×21 surface (batched vmap, automatic chunk), the same surface by a
naive per-point Python loop (timed on one row of 21 points and scaled by 21),
the 41-point 1-D curve, the 61-point interpolation, λ_max by Lanczos (tol 1e-4)
and Hutchinson's trace with 20 probes. ``--quick``: n 200, width 128.
``--surface-only``: just the batched surface (the target: < 60 s on 2 cores at
n 1000, width 1024). Timings on a shared machine are approximate.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
from engine.landscape import (  # noqa: E402
    filter_normalized_direction,
    hessian_top_eigenvalue,
    hessian_trace,
    interpolate,
    surface_1d,
    surface_2d,
)
from engine.models import build_model  # noqa: E402
from engine.train import data_loss  # noqa: E402

MNIST = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "mnist"


def load_inputs(n: int) -> tuple[torch.Tensor, torch.Tensor, str]:
    imgs, labs = MNIST / "t10k-images-idx3-ubyte.gz", MNIST / "t10k-labels-idx1-ubyte.gz"
    if imgs.is_file() and labs.is_file() and n <= 10_000:
        with gzip.open(imgs) as f:
            x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:n]
        with gzip.open(labs) as f:
            y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
        return (
            torch.tensor(x / 255.0, dtype=torch.float32),
            torch.tensor(y, dtype=torch.long),
            "MNIST",
        )
    g = torch.Generator().manual_seed(0)
    return torch.rand(n, 784, generator=g), torch.randint(0, 10, (n,), generator=g), "random"


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def naive_row(model, x, y, d1, d2, points: int) -> float:
    """Seconds for one row (``points`` evaluations) of the surface, one forward each."""
    base = {n: p.detach().clone() for n, p in model.named_parameters()}
    grid = torch.linspace(-1, 1, points)
    t0 = time.perf_counter()
    with torch.no_grad():
        for b in grid.tolist():
            for n, p in model.named_parameters():
                p.copy_(base[n] - d1[n] + b * d2[n])
            float(data_loss(model(x), y))
        for n, p in model.named_parameters():
            p.copy_(base[n])
    return time.perf_counter() - t0


def operations(model, x, y, d1, d2, init) -> list[tuple[str, object]]:
    """(name, thunk) per timed row; None marks the naive-loop estimate."""
    return [
        ("2-D surface 21x21 (batched)", lambda: surface_2d(model, x, y, directions=(d1, d2))),
        ("2-D surface 21x21 (naive loop, est.)", None),
        ("1-D curve 41 points", lambda: surface_1d(model, x, y, direction=d1)),
        ("interpolation 61 points", lambda: interpolate(model, init, x, y)),
        (
            "lambda_max Lanczos tol 1e-4",
            lambda: hessian_top_eigenvalue(model, x, y, method="lanczos"),
        ),
        ("trace Hutchinson 20 probes", lambda: hessian_trace(model, x, y, samples=20)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n 200, width 128")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument(
        "--surface-only", action="store_true", help="only the batched 21x21 surface (the target)"
    )
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (target: 2 cores)")
    args = ap.parse_args()
    n, width = (200, 128) if args.quick else (args.n, args.width)
    torch.set_num_threads(args.threads)
    x, y, src = load_inputs(n)
    print(f"data: {src}, n={n}, d=784, width={width}, float32, {torch.get_num_threads()} threads")
    print(f"{'model':<9} {'operation':<34} {'seconds':>8}")
    for kind in ("relu", "attn"):
        model = build_model(kind, x, width, 10, dtype=torch.float32)
        g = torch.Generator().manual_seed(0)
        d1, d2 = filter_normalized_direction(model, g), filter_normalized_direction(model, g)
        init = {k: v.clone() for k, v in model.state_dict().items()}
        rows = operations(model, x, y, d1, d2, init)
        if args.surface_only:
            rows = rows[:1]
        label = "2L-ReLU" if kind == "relu" else "MLP-Attn"
        for name, fn in rows:
            if fn is None:
                sec, extra = 21 * naive_row(model, x, y, d1, d2, 21), ""
            else:
                sec, out = timed(fn)
                extra = f"  ({out.iterations} HVPs)" if hasattr(out, "iterations") else ""
            print(f"{label:<9} {name:<34} {sec:>8.2f}{extra}", flush=True)


if __name__ == "__main__":
    main()
