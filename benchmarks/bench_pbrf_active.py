"""The PBRF truth of influence_check for a ReLU head: L-BFGS then the active set (on
demand; docs/benchmarks.md#influence-check-pbrf).

    OMP_NUM_THREADS=1 python benchmarks/bench_pbrf_active.py --data-dir ../shared/data/mnist [--kind relu] [--steps 10]

MNIST 3 vs 8 at influence_check's sizes (n 200, 40 removed points, width 256), the model
trained with the training defaults; ``polished_pbrf`` (engine.influence.pbrf_relu) with
``--steps`` L-BFGS steps and its noise floor (twice the steps): CPU seconds, wall
seconds, whether both converged (worst relative generalised-gradient norm), and the
floor's agreement (largest effect difference, Spearman ρ of the per-point scores).
"""

from __future__ import annotations

import argparse
import time

import torch
from bench_pbrf_kinks import trained_span_cell
from scipy.stats import spearmanr

from engine.influence.losses import encode_targets
from engine.influence.pbrf import _Problem
from engine.influence.pbrf_relu import ReluHead, polished_pbrf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data/mnist")
    ap.add_argument("--kind", default="relu", choices=("relu", "attn"))
    ap.add_argument("--points", type=int, default=40)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ds, cfg, net, inp, inp_t = trained_span_cell(a.data_dir, a.kind, a.seed)
    idx = torch.randperm(200, generator=torch.Generator().manual_seed(a.seed))[: a.points]
    t = encode_targets(ds.y_train, 1, dtype=torch.float64)
    tt = encode_targets(ds.y_test, 1, dtype=torch.float64)
    head = ReluHead.from_span(net.output, inp, inp_t, t, tt)  # type: ignore[arg-type]
    prob = _Problem(net, inp, t, idx, cfg.l2, "mse", 1 / inp.shape[0])
    c0, w0 = time.process_time(), time.perf_counter()
    r = polished_pbrf(prob, head, steps=2 * a.steps, tol=1e-6, checkpoint=a.steps)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    assert r.early is not None
    e0, e1 = r.early.effects, r.effects
    rho = spearmanr(e0.mean(0), e1.mean(0)).statistic
    print(
        f"{a.kind}: {a.steps} and {2 * a.steps} L-BFGS steps then the active set, "
        f"{len(idx)} points: {cpu:.1f} CPU-s ({wall:.1f} s wall); converged "
        f"{r.early.converged}/{r.converged} (worst generalised-gradient norm "
        f"{float(r.early.grad_norm.max()):.2g}/{float(r.grad_norm.max()):.2g}); floor: "
        f"largest effect difference {float((e0 - e1).abs().max() / e0.abs().max()):.2g} "
        f"of the largest effect, Spearman ρ {rho:.4f}"
    )


if __name__ == "__main__":
    main()
