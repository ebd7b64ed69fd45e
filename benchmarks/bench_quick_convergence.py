"""Which cells of the --quick preset converge: the measurement behind ``presets.QUICK``.

For each data set (10-class and binary), model and width, trains once for the largest
epoch count of ``--at`` at ``--batch`` (the paper's Adam, lr 1e-3, L2 1e-3, the preset's
n_train 300 / n_test 100, capped as --quick caps them) and reports, at every epoch count
of ``--at``, whether the cell has converged by ``engine.results.convergence`` on the loss
curve so far (a run of E epochs is exactly the first E epochs of a longer one: same seed,
same batch order), its training loss and the share of the decrease made by the last 10 %
of epochs; at the end its test accuracy and whether that is above chance.

    python benchmarks/bench_quick_convergence.py --datasets digits,mnist --batch 32 --at 100,200,300
"""

from __future__ import annotations

import argparse
import time

import torch

from engine.data import load_dataset
from engine.models import MODEL_LABELS, build_model
from engine.reproduce.presets import apply_quick, cap_sizes
from engine.results import above_chance, constant_loss, convergence, majority_rate
from engine.run.context import batch_seed
from engine.run.spec import RunSpec, TrainSpec
from engine.train import evaluate, train

ROOTS = {"mnist": "../shared/data/mnist", "cifar10": "../shared/data/cifar10"}
BINARY = {"digits": (3, 8), "mnist": (3, 8), "cifar10": (1, 0)}


def main() -> None:
    quick = apply_quick(RunSpec())  # the preset's values, typed
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="digits", help="comma-separated: digits, mnist, cifar10")
    ap.add_argument("--batch", type=int, default=quick.train.batch_size)
    ap.add_argument("--at", default=f"50,100,{quick.train.epochs}", help="epoch counts to report")
    ap.add_argument("--widths", default=",".join(str(w) for w in quick.model.widths))
    ap.add_argument(
        "--data-root", default=None, help="parent of mnist/ and cifar10/ (default ../shared/data)"
    )
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    at = sorted(int(e) for e in args.at.split(","))
    widths = [int(w) for w in args.widths.split(",")]
    cfg = TrainSpec(epochs=at[-1], batch_size=args.batch)
    print(f"Adam lr {cfg.lr:g}, batch {cfg.batch_size}, L2 {cfg.l2:g}; C = converged, - = not")
    for name in args.datasets.split(","):
        root = f"{args.data_root}/{name}" if args.data_root else ROOTS.get(name)
        for classes in (None, BINARY.get(name)):
            s = cap_sizes(
                name,
                len(classes) if classes else None,
                quick.data.n_train,
                quick.data.n_test,
            )
            ds = load_dataset(
                name, root=root, classes=classes, n_train=s.n_train, n_test=s.n_test, seed=0
            )
            steps = -(-ds.n_train // cfg.batch_size)
            chance = majority_rate(ds.y_test)
            label = ds.name + (f" {classes[0]} vs {classes[1]}" if classes else " 10-class")
            print(
                f"\n{label}: n_train {ds.n_train}, n_test {ds.n_test}, {steps} steps an epoch, chance {chance:.2f}"
            )
            for kind in ("relu", "attn"):
                for w in widths:
                    model = build_model(kind, ds.x_train, w, ds.n_out, seed=0)
                    x, y = ds.x_train_raw.float(), ds.y_train
                    if torch.is_floating_point(y):
                        y = y.float()
                    t0 = time.perf_counter()
                    loss = [
                        st.loss
                        for st in train(
                            model,
                            x,
                            y,
                            cfg,
                            generator=torch.Generator().manual_seed(batch_seed(0, w)),
                        )
                    ]
                    sec = time.perf_counter() - t0
                    yt = ds.y_test.float() if torch.is_floating_point(ds.y_test) else ds.y_test
                    _, acc = evaluate(model, ds.x_test_raw.float(), yt)
                    cells = []
                    for e in at:
                        c = convergence(loss[:e], baseline=constant_loss(ds.y_train))
                        cells.append(
                            f"E{e} {'C' if c.converged else '-'} L {loss[e - 1]:.3f} share {c.share:+.3f}"
                        )
                        ok = "above" if above_chance(acc, ds.n_test, chance) else "AT CHANCE"
                    print(
                        f"  {MODEL_LABELS[kind]:8s} m={w:<5d} {sec:6.1f}s  "
                        + " | ".join(cells)
                        + f" | test {acc:.2f} {ok}"
                    )


if __name__ == "__main__":
    main()
