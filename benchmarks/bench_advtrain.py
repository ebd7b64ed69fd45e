"""Benchmark: adversarial-training recipes, their cost and what they buy (issue #16, part 4).

    python benchmarks/bench_advtrain.py [--dataset mnist|cifar10|digits] [--n-train 500]
                                        [--width 256] [--epochs 30] [--eps 0.3]
                                        [--recipes pgd:40,pgd:10,fgsm_rs] [--models relu,attn]

Each recipe trains each model through the run's own path (``RunContext.train_model``,
``adversarial=True``: the spec's ``flip.adv_recipe`` / ``adv_steps``), in the same
process, then attacks the test split with PGD-40 (α = 2.5·ε/40, one random start) at
the training ε. Printed per (model, recipe): training seconds and their ratio to the
first recipe's (PGD-40 by default: the paper's "same attack"), clean and robust test
accuracy, the final training loss and the convergence guard.

Data: ../shared/data/<dataset> (the test split is enough), two classes (MNIST 3 vs 8,
CIFAR-10 1 vs 0, digits 3 vs 8), float32, CPU unless CUDA is present.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# isort: off
import engine  # noqa: E402,F401  (first: it sets OMP_WAIT_POLICY before torch loads)
import torch  # noqa: E402

# isort: on
from engine.attacks import pgd  # noqa: E402
from engine.run.context import RunContext  # noqa: E402
from engine.run.spec import RunSpec  # noqa: E402
from engine.train import evaluate  # noqa: E402

CLASSES = {"cifar10": (1, 0), "mnist": (3, 8), "digits": (3, 8)}


def parse_recipe(text: str) -> dict[str, object]:
    """``pgd:40`` → PGD with 40 steps; ``fgsm_rs`` → FGSM from a random start."""
    name, _, steps = text.partition(":")
    if name == "fgsm_rs" and not steps:
        return {"flip__adv_recipe": "fgsm_rs"}
    if name == "pgd" and steps.isdigit() and int(steps) > 0:
        return {"flip__adv_recipe": "pgd", "flip__adv_steps": int(steps)}
    raise SystemExit(f"invalid recipe {text!r}: pgd:STEPS or fgsm_rs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="mnist", choices=sorted(CLASSES))
    ap.add_argument("--n-train", type=int, default=500)
    ap.add_argument("--n-test", type=int, default=200)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--eps", type=float, default=0.3)
    ap.add_argument("--recipes", default="pgd:40,pgd:10,fgsm_rs")
    ap.add_argument("--models", default="relu,attn")
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    a = ap.parse_args()
    recipes = [(r, parse_recipe(r)) for r in a.recipes.split(",")]
    data_dir = None if a.dataset == "digits" else str(Path(a.data_dir) / a.dataset)
    base = RunSpec(experiment="advtrain", seeds=(0,)).replace(
        data__name=a.dataset,
        data__classes=CLASSES[a.dataset],
        data__n_train=a.n_train,
        data__n_test=a.n_test,
        data__data_dir=data_dir,
        flip__width=a.width,
        flip__adv_eps=a.eps,
        train__epochs=a.epochs,
    )
    print(
        f"{a.dataset} {CLASSES[a.dataset]} n_train {a.n_train} n_test {a.n_test} m {a.width} "
        f"{a.epochs} epochs, ε {a.eps}; robust = PGD-40 test accuracy at ε {a.eps}"
    )
    print(
        f"{'model':8} {'recipe':8} {'seconds':>8} {'ratio':>6} {'clean':>6} {'robust':>6} "
        f"{'loss':>7} converged"
    )
    warm = RunContext(base.replace(train__epochs=1, **recipes[0][1]))
    for _ in warm.train_model("relu", a.width, 0, adversarial=True):
        pass  # warm-up: imports, allocator, threads (not timed)
    for kind in a.models.split(","):
        first = None
        for label, change in recipes:
            ctx = RunContext(base.replace(**change))
            t0 = time.perf_counter()
            gen = ctx.train_model(kind, a.width, 0, adversarial=True)
            try:
                while True:
                    next(gen)
            except StopIteration as stop:
                tm = stop.value
            secs = time.perf_counter() - t0
            first = first or secs
            ds = tm.dataset
            x, y = ctx.to_device(ds.x_test_raw), ctx.to_device(ds.y_test)
            model = tm.model.eval()
            adv = pgd(model, x, y, eps=a.eps, steps=40, generator=torch.Generator().manual_seed(1))
            _, robust = evaluate(model, adv.x_adv, y)
            print(
                f"{tm.kind:8} {label:8} {secs:8.1f} {secs / first:6.2f} {tm.test_accuracy:6.3f} "
                f"{robust:6.3f} {tm.train_loss:7.4f} {tm.converged}"
            )


if __name__ == "__main__":
    main()
