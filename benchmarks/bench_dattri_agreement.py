"""Benchmark: rank agreement of our influence estimators with dattri's (on demand).

    python benchmarks/bench_dattri_agreement.py --data-dir ../shared/data/mnist [--width 16] [--seed 0] [--cg-iters 100]

MNIST 3 vs 8, influence_check's sizes (n_train 200, n_test 100, 40 removed points drawn
with the seed), each model (2L-ReLU, MLP-Attn) trained with the training defaults
(engine.train, docs/protocol.md#training). Ours, as influence_check computes them
(engine.malleability.check): kernel LOO at its three ridges, gradient influence exact
(the Gauss–Newton kernel solve) and CG. dattri's, on the same float64 network in the span
of the training features (``span_problem``, an exact reparametrisation of the first
layer: tests/engine/influence/test_pbrf.py), same loss (the mean per-example squared
error), damping λ = train.l2: the explicit influence function (dense Hessian), its CG
attributor (``--cg-iters``, tol 1e-7) and TracIn on the trained weights alone (gradient
dot products, no Hessian). dattri scores S[i, t] = ∇ℓ_iᵀ(H + λI)⁻¹∇ℓ_t, ours
I[t, i] = S[i, t] / n (docs/protocol.md#influence, "Conventions"); the comparison is per
removed point, s_i = mean_t (``engine.influence.retrain.agreement``): Spearman ρ of ours
against each of theirs. The explicit Hessian has (width · 200)² entries: width 16 (3,200
parameters) by default; influence_check's width 256 (51,200) is for the CG and TracIn
columns only (``--no-explicit``).
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.func import functional_call
from torch.utils.data import DataLoader, TensorDataset

from engine.data import load_dataset
from engine.influence.losses import encode_targets, pointwise_loss
from engine.influence.retrain import agreement
from engine.malleability.check import (
    float64_copy,
    gradient_estimates,
    kernel_estimates,
    span_problem,
)
from engine.models import MODEL_LABELS, build_model
from engine.run.spec import TrainSpec
from engine.train import train


def dattri_scores(
    net: torch.nn.Module,
    inp: torch.Tensor,
    t: torch.Tensor,
    inp_t: torch.Tensor,
    tt: torch.Tensor,
    idx: list[int],
    lam: float,
    *,
    explicit: bool,
    cg_iters: int,
) -> dict[str, tuple[torch.Tensor, float]]:
    """dattri's attributions in our convention, I [t, k] = S[idx, :]ᵀ / n, and seconds."""
    from dattri.algorithm.influence_function import IFAttributorCG, IFAttributorExplicit
    from dattri.algorithm.tracin import TracInAttributor
    from dattri.task import AttributionTask

    n = inp.shape[0]

    def loss_func(params, data):
        xb, tb = data
        if xb.ndim == 1:  # TracIn's per-example call (vmapped over the batch)
            xb, tb = xb[None], tb[None]
        return pointwise_loss(functional_call(net, params, (xb,)), tb, "mse").mean()

    task = AttributionTask(loss_func=loss_func, model=net, checkpoints=net.state_dict())
    train_all = DataLoader(TensorDataset(inp, t), batch_size=n, shuffle=False)
    train_k = DataLoader(TensorDataset(inp[idx], t[idx]), batch_size=len(idx), shuffle=False)
    test = DataLoader(TensorDataset(inp_t, tt), batch_size=inp_t.shape[0], shuffle=False)
    makers = {
        "CG IF": lambda: IFAttributorCG(
            task=task, layer_name=["b"], max_iter=cg_iters, tol=1e-7, regularization=lam
        ),
        "TracIn": lambda: TracInAttributor(
            task=task, weight_list=torch.ones(1, dtype=inp.dtype), normalized_grad=False,
            layer_name=["b"],
        ),
    }  # fmt: skip
    if explicit:
        makers["explicit IF"] = lambda: IFAttributorExplicit(
            task=task, layer_name=["b"], regularization=lam
        )
    out = {}
    for name, make in makers.items():
        t0 = time.perf_counter()
        att = make()
        if name != "TracIn":
            att.cache(train_all)
        s = att.attribute(train_k, test)  # [k, t]
        out[name] = (s.detach().T.to(torch.float64) / n, time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data/mnist")
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cg-iters", type=int, default=100)
    ap.add_argument("--no-explicit", action="store_true")
    a = ap.parse_args()
    ds = load_dataset(
        "mnist", root=a.data_dir, classes=(3, 8), n_train=200, n_test=100, seed=a.seed
    )
    cfg = TrainSpec()
    idx = torch.randperm(200, generator=torch.Generator().manual_seed(a.seed))[:40].tolist()
    print(f"MNIST 3 vs 8, n 200, 100 test points, 40 removed points, width {a.width}, "
          f"seed {a.seed}, λ {cfg.l2:g}; Spearman ρ of ours (rows) with dattri's (columns)")  # fmt: skip
    for kind in ("relu", "attn"):
        model = build_model(kind, ds.x_train.to(torch.float32), a.width, seed=a.seed)
        gen = torch.Generator().manual_seed(a.seed)
        x, y = ds.x_train_raw.to(torch.float32), ds.y_train.to(torch.float32)
        for _ in train(model, x, y, cfg, generator=gen):
            pass
        model.eval()
        ours, secs, labels = kernel_estimates(
            model, ds, ["lambda", "objective", "nlambda"], l2=cfg.l2, transductive=False
        )
        ours = {k: v[:, idx] for k, v in ours.items()}
        g, g_secs, g_labels, _ = gradient_estimates(
            model, ds, idx, methods=("exact", "cg"), l2=cfg.l2,
            exact_max_params=4096, transductive=False,
        )  # fmt: skip
        ours.update(g)
        secs.update(g_secs)
        labels.update(g_labels)
        m64 = float64_copy(model, ds, transductive=False)
        net, inp, inp_t = span_problem(
            m64, ds.x_train_raw.to(torch.float64), ds.x_test_raw.to(torch.float64)
        )
        t = encode_targets(ds.y_train, 1, dtype=torch.float64)
        tt = encode_targets(ds.y_test, 1, dtype=torch.float64)
        theirs = dattri_scores(
            net, inp, t, inp_t, tt, idx, cfg.l2, explicit=not a.no_explicit,
            cg_iters=a.cg_iters,
        )  # fmt: skip
        names = list(theirs)
        print(f"\n{MODEL_LABELS[kind]}")
        print(f"{'ours':<30}" + "".join(f"{n:>12}" for n in names) + f"{'ours s':>8}")
        for key, est in ours.items():
            label = f"{key[0]} {labels[key].split(':')[0]}"
            rhos = [agreement(est, theirs[n][0]).spearman for n in names]
            print(f"{label:<30}" + "".join(f"{r:>12.3f}" for r in rhos) + f"{secs[key]:>8.1f}")
        print(f"{'dattri seconds':<30}" + "".join(f"{theirs[n][1]:>12.1f}" for n in names))
        if "explicit IF" in theirs:
            ex, mine = theirs["explicit IF"][0].detach(), ours[("gradient_exact", "lambda")]
            rel = float((ex - mine).abs().max() / mine.abs().max())
            print(f"max |ours exact − dattri explicit| / max |ours|: {rel:.1e}")


if __name__ == "__main__":
    main()
