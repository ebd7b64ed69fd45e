"""Benchmark: one stacked step of adversarial training as `reproduce --dataset digits
--quick` runs it, in this process's CPU time.

    python benchmarks/bench_adv_step.py [--width 64] [--epochs 4] [--repeat 3] [--save F | --compare F]

Three seeds of 2L-ReLU and three of MLP-Attn (centred, 10 classes, d 64, n 300, batch 32,
Adam with L2 1e-3) train stacked in one chunk (``engine.train.batched.train_batched``),
each mini-batch replaced by its 10-step PGD (ε 0.1, ℓ∞, random start): eleven
closed-form passes over both feature maps a step. Prints the median CPU time a step
over ``--repeat`` runs (after one warm-up). ``--save F`` writes the trained weights,
``--compare F`` says whether this code's weights equal them bit for bit: run it once on
the code before a change and once after (docs/benchmarks-training.md#pgd-ops).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from engine.models.mlp_attn import MLPAttn  # noqa: E402
from engine.models.two_layer import TwoLayerNet  # noqa: E402
from engine.train.adversarial import make_perturb  # noqa: E402
from engine.train.batched import train_batched  # noqa: E402

N, D, BS, K = 300, 64, 32, 10


def run(m: int, epochs: int) -> tuple[float, list[torch.Tensor]]:
    """(CPU seconds a stacked step, the six networks' trained weights)."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(N, D, generator=g)
    y = torch.randint(0, K, (N,), generator=g)
    mu = x.mean(0)
    xh = x / x.norm(dim=1, keepdim=True)
    ctx = xh.T @ xh / N
    nets: list[torch.nn.Module] = [TwoLayerNet(D, m, K, seed=s, input_shift=mu) for s in range(3)]
    nets += [MLPAttn(ctx, m, K, seed=s, input_shift=mu) for s in range(3)]
    cfg = SimpleNamespace(
        optimizer="adam", lr=1e-3, epochs=epochs, batch_size=BS, l2=1e-3, engine="fused"
    )
    gens = [torch.Generator().manual_seed(s) for s in range(6)]
    per = [
        make_perturb("pgd", 0.1, 10, None, generator=torch.Generator().manual_seed(10 + s))
        for s in range(6)
    ]
    t0 = time.process_time()
    for _ in train_batched(nets, x, y, cfg, generators=gens, perturbs=per):  # type: ignore[arg-type]
        pass
    took = (time.process_time() - t0) / (epochs * -(-N // BS))
    return took, [p.detach().clone() for n in nets for p in n.parameters()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--save", type=Path)
    ap.add_argument("--compare", type=Path)
    a = ap.parse_args()
    runs = [run(a.width, a.epochs) for _ in range(a.repeat + 1)][1:]
    times = [t for t, _ in runs]
    print(
        f"m {a.width}: {1e3 * statistics.median(times):.2f} ms CPU a stacked adversarial "
        f"step (6 networks, PGD 10; runs {', '.join(f'{1e3 * t:.2f}' for t in times)})"
    )
    weights = runs[-1][1]
    if a.save:
        torch.save(weights, a.save)
    if a.compare:
        old = torch.load(a.compare)
        same = len(old) == len(weights) and all(torch.equal(u, v) for u, v in zip(old, weights))
        print(f"weights bit for bit equal to {a.compare}: {same}")


if __name__ == "__main__":
    main()
