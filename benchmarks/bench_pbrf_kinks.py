"""Why the PBRF of a ReLU head misses its tolerance: its minimiser sits on kinks (on demand).

    python benchmarks/bench_pbrf_kinks.py --data-dir ../shared/data/mnist [--kind relu] [--steps 100] [--points 4]

MNIST 3 vs 8 at influence_check's sizes (n 200, width 256), the model trained with the
training defaults (docs/protocol.md#training); the PBRF of ``--points`` removed points
solved by L-BFGS as influence_check does (engine.influence.pbrf, in the span of the
training features). After ``--steps`` iterations it prints, per point, the relative
gradient norm (influence_check.pbrf_tol is 1e-6) and the (unit, training point) pairs
whose pre-activation w_r·φ_j sits within 1e-6 of the median |w*_r·φ_j| of zero: a kink of
the piecewise-quadratic objective, where the gradient jumps and need not vanish at the
minimiser, and how many pairs changed sign from θ* (docs/benchmarks.md#influence-check-pbrf).
"""

from __future__ import annotations

import argparse
import time

import torch

from engine.data import load_dataset
from engine.influence import pbrf
from engine.influence.losses import encode_targets
from engine.malleability.check import float64_copy, span_problem
from engine.models import build_model
from engine.run.spec import TrainSpec
from engine.train import train


def trained_span_cell(data_dir: str, kind: str, seed: int) -> tuple:
    """influence_check's cell on MNIST 3 vs 8 (n 200, n_test 100, width 256), trained with
    the training defaults, as its float64 span problem: (data set, training spec, the span
    head, its training inputs [n, ·], its test inputs)."""
    ds = load_dataset("mnist", root=data_dir, classes=(3, 8), n_train=200, n_test=100, seed=seed)
    cfg = TrainSpec()
    model = build_model(kind, ds.x_train.to(torch.float32), 256, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    x, y = ds.x_train_raw.to(torch.float32), ds.y_train.to(torch.float32)
    for _ in train(model, x, y, cfg, generator=gen):
        pass
    m64 = float64_copy(model.eval(), ds, transductive=False)
    net, inp, inp_t = span_problem(
        m64, ds.x_train_raw.to(torch.float64), ds.x_test_raw.to(torch.float64)
    )
    return ds, cfg, net, inp, inp_t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data/mnist")
    ap.add_argument("--kind", default="relu", choices=("relu", "attn"))
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--points", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ds, cfg, net, inp, _ = trained_span_cell(a.data_dir, a.kind, a.seed)
    idx = torch.randperm(200, generator=torch.Generator().manual_seed(a.seed))[: a.points]
    t = encode_targets(ds.y_train, 1, dtype=torch.float64)
    prob = pbrf._Problem(net, inp, t, idx, cfg.l2, "mse", 1 / inp.shape[0])
    t0 = time.perf_counter()
    big, gn, steps = pbrf._lbfgs(prob, 1e-6, a.steps, lambda *_: None)
    secs = time.perf_counter() - t0
    m = int(net.m)  # type: ignore[arg-type]
    z0 = inp[:, :m]  # w*_r·φ_j [n, m]
    z = z0[None] + torch.einsum("nr,kmr->knm", inp[:, m:], big.reshape(len(idx), m, -1))
    tiny = 1e-6 * float(z0.abs().median())
    print(
        f"{a.kind}, {steps} L-BFGS steps, {secs:.0f} s; pairs (unit, point): {z0.numel()}, "
        f"at kinks at θ*: {int((z0.abs() < tiny).sum())}"
    )
    for k, i in enumerate(idx.tolist()):
        kinks = z[k].abs() < tiny
        flips = (z[k] > 0) != (z0 > 0)
        print(
            f"point {i}: relative gradient norm {float(gn[k]):.3g}; at kinks {int(kinks.sum())}"
            f" (own point {int(kinks[i].sum())}); sign changed {int(flips.sum())}"
        )


if __name__ == "__main__":
    main()
