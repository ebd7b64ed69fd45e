"""Throughput of FGSM, PGD-40 and MIM-10 (images/second) on MNIST-sized inputs.

    python benchmarks/bench_attacks.py [--quick] [--n 1000] [--repeats 3] [--device cpu|cuda]

A 784-1024-10 TwoLayerNet in float32 on the CPU attacks n inputs (the first n MNIST
test images from ../shared/data/mnist when present, else uniform random pixels) in
one batch, ε = 0.3 ℓ∞. When torchattacks is installed, the same attacks from it run
on the same model and inputs, after ours, and for the deterministic attacks (FGSM, MIM) the fraction of
pixels whose x_adv differs (float32 rounding flips the sign of near-zero gradient
components) is printed. ``PGD-40*`` is ours without the before/after losses (the
adversarial-training path). Best of ``--repeats`` timings; the attack API also
returns loss_before/loss_after, which costs one extra forward pass (two for PGD
with a random start) that torchattacks does not make.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
from engine.attacks import AttackResult, fgsm, mim, pgd  # noqa: E402
from engine.models import TwoLayerNet  # noqa: E402
from engine.train.adversarial import make_pgd_perturb  # noqa: E402

MNIST = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "mnist"


def load_inputs(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, str]:
    imgs, labs = MNIST / "t10k-images-idx3-ubyte.gz", MNIST / "t10k-labels-idx1-ubyte.gz"
    if imgs.is_file() and labs.is_file() and n <= 10_000:
        with gzip.open(imgs) as f:
            x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:n]
        with gzip.open(labs) as f:
            y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
        return torch.from_numpy(x / 255.0).float(), torch.from_numpy(y.astype(np.int64)), "MNIST"
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 784, generator=g), torch.randint(0, 10, (n,), generator=g), "random"


class Flatten(nn.Module):
    """torchattacks expects images [N, C, H, W]; the model takes [N, 784]."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.flatten(1))


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 inputs, 1 repeat")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    a = ap.parse_args()
    dev = torch.device(a.device)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    n, repeats = (200, 1) if a.quick else (a.n, a.repeats)
    x, y, source = load_inputs(n)
    x, y = x.to(dev), y.to(dev)
    model = TwoLayerNet(784, 1024, 10, seed=0, dtype=torch.float32).to(dev)
    eps = 0.3
    gen = torch.Generator(device=dev).manual_seed(0)
    ours = {
        "FGSM": lambda: fgsm(model, x, y, eps=eps),
        "PGD-40": lambda: pgd(model, x, y, eps=eps, steps=40, alpha=0.01, generator=gen),
        "MIM-10": lambda: mim(model, x, y, eps=eps, steps=10, decay=1.0),
        # x_adv only (no loss_before/loss_after), as adversarial training uses it
        "PGD-40*": lambda: make_pgd_perturb(eps, 40, 0.01, True, "linf", gen)(model, x, y),
    }
    try:
        import torchattacks as ta
    except ImportError:
        ta = None
    theirs = {}
    if ta is not None:
        wrapped = Flatten(model).eval()
        xi = x.view(-1, 1, 28, 28)
        atk = {
            "FGSM": ta.FGSM(wrapped, eps=eps),
            "PGD-40": ta.PGD(wrapped, eps=eps, alpha=0.01, steps=40, random_start=True),
            "MIM-10": ta.MIFGSM(wrapped, eps=eps, alpha=eps / 10, steps=10, decay=1.0),
        }
        theirs = {k: (lambda at=v: at(xi, y).view(-1, 784)) for k, v in atk.items()}
        theirs["PGD-40*"] = theirs["PGD-40"]
    for fn in [*ours.values(), *theirs.values()]:
        fn()  # warm-up: first-call allocations and lazy initialisation
    print(
        f"{n} {source} inputs, d=784, TwoLayerNet 784-1024-10 float32 on {dev}, "
        f"{torch.get_num_threads()} threads, eps={eps} linf, best of {repeats}"
    )
    print(
        f"{'attack':<8}{'ours img/s':>12}{'torchattacks img/s':>20}{'ratio':>8}{'x_adv differ':>14}"
    )
    for name, fn in ours.items():
        t_ours = best_time(fn, repeats)
        row = f"{name:<8}{n / t_ours:>12.0f}"
        if name in theirs:
            t_ta = best_time(theirs[name], repeats)
            agree = "-"
            if name in ("FGSM", "MIM-10"):  # deterministic: compare the points
                res = fn()
                assert isinstance(res, AttackResult)
                diff = (res.x_adv - theirs[name]()).abs()
                agree = f"{float((diff > 1e-6).double().mean()):.1e}"
            row += f"{n / t_ta:>20.0f}{t_ta / t_ours:>8.2f}{agree:>14}"
        else:
            row += f"{'(not installed)':>20}"
        print(row)


if __name__ == "__main__":
    main()
