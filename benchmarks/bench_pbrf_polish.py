"""The PBRF truth's cost and resolution at two L-BFGS budgets, and the active set on one
thread against two (on demand; docs/benchmarks.md#influence-check-pbrf).

    nice -n 10 python benchmarks/bench_pbrf_polish.py --data-dir ../shared/data/mnist [--kind relu]

MNIST 3 vs 8 at influence_check's sizes (n 200, 40 random removed points, width 256),
trained with the training defaults (cached in ``--cache``). For each ``--steps`` S:
``polished_pbrf`` with S L-BFGS steps and its floor 2·S (CPU and wall seconds, points
converged of each, the floor's Spearman ρ on the points both converged); the truths at
the two budgets against each other; then the active set alone from the same L-BFGS
iterate, one thread against torch's default, alternated twice (CPU seconds each).
"""

from __future__ import annotations

import argparse
import os
import time
from contextlib import nullcontext

import torch
from bench_pbrf_kinks import trained_span_cell
from scipy.stats import spearmanr

import engine.influence.pbrf_relu as pr
from engine.influence.losses import encode_targets
from engine.influence.pbrf import _lbfgs, _Problem


def _clock() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def _since(t: tuple[float, float]) -> str:
    c, w = _clock()
    return f"{c - t[0]:.1f} CPU-s ({w - t[1]:.1f} s wall)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data/mnist")
    ap.add_argument("--kind", default="relu", choices=("relu", "attn"))
    ap.add_argument("--steps", default="10,25")
    ap.add_argument("--threads-only", action="store_true", help="only the thread A/B")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default="")
    a = ap.parse_args()
    if a.cache and os.path.exists(a.cache):
        ds, cfg, net, inp, inp_t = torch.load(a.cache, weights_only=False)
    else:
        ds, cfg, net, inp, inp_t = trained_span_cell(a.data_dir, a.kind, a.seed)
        if a.cache:
            torch.save((ds, cfg, net, inp, inp_t), a.cache)
    idx = torch.randperm(200, generator=torch.Generator().manual_seed(a.seed))[:40]
    t = encode_targets(ds.y_train, 1, dtype=torch.float64)
    tt = encode_targets(ds.y_test, 1, dtype=torch.float64)
    head = pr.ReluHead.from_span(net.output, inp, inp_t, t, tt)  # type: ignore[arg-type]
    prob = _Problem(net, inp, t, idx, cfg.l2, "mse", 1 / inp.shape[0])
    truths = {}
    for s in () if a.threads_only else (int(v) for v in a.steps.split(",")):
        t0 = _clock()
        r = pr.polished_pbrf(prob, head, steps=2 * s, tol=1e-6, checkpoint=s)
        assert r.early is not None
        keep = r.early.point_converged & r.point_converged
        rho = spearmanr(r.early.effects[:, keep].mean(0), r.effects[:, keep].mean(0)).statistic
        truths[s] = (r.early, keep)
        print(
            f"{a.kind} steps {s} (floor {2 * s}): {_since(t0)}; converged "
            f"{int(r.early.point_converged.sum())}/40 and {int(r.point_converged.sum())}/40; "
            f"floor ρ {rho:.4f} on {int(keep.sum())} points"
        )
    if len(truths) == 2:
        (ra, ka), (rb, kb) = truths.values()
        k = ka & kb
        rho = spearmanr(ra.effects[:, k].mean(0), rb.effects[:, k].mean(0)).statistic
        print(f"the two budgets' truths: Spearman ρ {rho:.4f} on {int(k.sum())} points")
    s = int(a.steps.split(",")[0])
    with torch.no_grad():
        big, _, _ = _lbfgs(prob, 1e-6, s, lambda *_: None)
    m = head.z.shape[1]
    z = head.z + torch.einsum("jr,kur->kju", inp[:, m:], big.reshape(40, m, -1))
    one = pr.torch_threads
    for label in ("1 thread", f"{torch.get_num_threads()} threads") * 2:
        pr.torch_threads = one if label == "1 thread" else (lambda n: nullcontext())  # type: ignore[assignment,return-value]
        t0 = _clock()
        res = pr.relu_head_pbrf(head, idx.tolist(), lam=cfg.l2, loss="mse", start=z)
        print(f"active set from {s} steps, {label}: {_since(t0)}, rounds {int(res.rounds.sum())}")
    pr.torch_threads = one


if __name__ == "__main__":
    main()
