"""The ReLU head's PBRF by active set against L-BFGS (on demand; docs/benchmarks.md#influence-check-pbrf).

    python benchmarks/bench_pbrf_active.py --data-dir ../shared/data/mnist [--kind relu] [--points 40] [--lbfgs 0]

MNIST 3 vs 8 at influence_check's sizes (n 200, width 256), the model trained with the
training defaults; the PBRF of ``--points`` removed points solved by the active set
(engine.influence.pbrf_relu) from two starts, and with ``--lbfgs N`` by N L-BFGS steps
(engine.influence.pbrf) for comparison: seconds, rounds, pinned pairs, the relative
generalised-gradient norm, and the largest difference of the effects.
"""

from __future__ import annotations

import argparse
import time

import torch

from engine.data import load_dataset
from engine.influence import pbrf
from engine.influence.losses import encode_targets
from engine.influence.pbrf_relu import ReluHead, relu_head_pbrf
from engine.malleability.check import float64_copy, span_problem
from engine.models import build_model
from engine.run.spec import TrainSpec
from engine.train import train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data/mnist")
    ap.add_argument("--kind", default="relu", choices=("relu", "attn"))
    ap.add_argument("--points", type=int, default=40)
    ap.add_argument("--lbfgs", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ds = load_dataset(
        "mnist", root=a.data_dir, classes=(3, 8), n_train=200, n_test=100, seed=a.seed
    )
    cfg = TrainSpec()
    model = build_model(a.kind, ds.x_train.to(torch.float32), 256, seed=a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    x, y = ds.x_train_raw.to(torch.float32), ds.y_train.to(torch.float32)
    for _ in train(model, x, y, cfg, generator=gen):
        pass
    m64 = float64_copy(model.eval(), ds, transductive=False)
    net, inp, inp_t = span_problem(
        m64, ds.x_train_raw.to(torch.float64), ds.x_test_raw.to(torch.float64)
    )
    idx = torch.randperm(200, generator=torch.Generator().manual_seed(a.seed))[: a.points]
    t = encode_targets(ds.y_train, 1, dtype=torch.float64)
    tt = encode_targets(ds.y_test, 1, dtype=torch.float64)
    head = ReluHead.from_span(net.output, inp, inp_t, t, tt)  # type: ignore[arg-type]
    runs = {}
    for start in (0.0, 0.005):
        t0 = time.process_time()
        r = relu_head_pbrf(head, idx.tolist(), lam=cfg.l2, loss="mse", pin_start=start)
        runs[start] = r
        print(
            f"{a.kind} active set, pinned at the start {start:g}: {time.process_time() - t0:.2f} CPU-s; rounds "
            f"{int(r.rounds.min())}-{int(r.rounds.max())}, pinned {int(r.pinned.min())}-"
            f"{int(r.pinned.max())}, stable {int(r.stable.sum())}/{len(idx)}, convex "
            f"{int(r.convex.sum())}/{len(idx)}, worst gradient norm {float(r.grad_norm.max()):.2g}"
        )
    e0, e1 = runs[0.0].effects, runs[0.005].effects
    scale = float(e0.abs().max())
    print(
        f"the two starts: largest effect difference {float((e0 - e1).abs().max()) / scale:.2g} (of the largest effect)"
    )
    if a.lbfgs:
        t0 = time.process_time()
        res = pbrf.pbrf_effects(
            net, inp, ds.y_train, inp_t, ds.y_test, idx, lam=cfg.l2, tol=1e-6, max_steps=a.lbfgs
        )
        print(
            f"L-BFGS {res.steps} steps: {time.process_time() - t0:.1f} CPU-s, worst gradient "
            f"norm {float(res.grad_norm.max()):.2g}; largest effect difference from the "
            f"active set {float((res.effects - e0).abs().max()) / scale:.2g}"
        )


if __name__ == "__main__":
    main()
