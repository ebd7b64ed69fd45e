"""Benchmark: a width sweep trained as one fused network against one cell per width.

    python benchmarks/bench_fused_widths.py [--dataset mnist|cifar10|digits] [--n-train 500]
                                            [--widths 4,8,...,4096] [--epochs 20] [--repeat 3]

Issue #16, part 3: Adam and the L2 penalty (coupled weight decay) are element-wise, so the
hidden units of every width concatenated into one W_all [Σm, d], each width's output read
from its own segment (h @ A with A block-diagonal: a_r/√m_w in width w's column) and the
losses summed, train exactly as separate 2L-ReLU networks that see the same mini-batches:
the gradient of segment w is the gradient of loss_w alone. This script trains the sweep
both ways from the same initialisations and batch order, checks the weights agree (max
relative difference, float32 matmul rounding only), and prints the wall-time ratio.

The run itself keeps one cell per width: each cell has its own batch order
(``batch_seed(seed, width)``), its own guards, rows and resume marker, and runs on any
executor. Fusing would change which mini-batches each width sees (so every number of a
run) and the cell structure the store and Ray rely on; this measures what it would buy.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# isort: off
import engine  # noqa: E402,F401  (first: it sets OMP_WAIT_POLICY before torch loads)
import torch  # noqa: E402

# isort: on
from torch import nn  # noqa: E402

from engine.data import load_dataset  # noqa: E402
from engine.models import TwoLayerNet  # noqa: E402
from engine.run.spec import DEFAULT_WIDTHS, TrainSpec  # noqa: E402
from engine.train import train  # noqa: E402
from engine.train.loop import _optimizer, data_loss  # noqa: E402

CLASSES = {"cifar10": (1, 0), "mnist": (3, 8), "digits": (3, 8)}


class Fused(nn.Module):
    """Every width's hidden layer in one parameter; outputs [n, K], one column a width."""

    def __init__(self, nets: list[TwoLayerNet]) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.cat([n.weight.detach() for n in nets]).clone())
        total = self.weight.shape[0]
        a = torch.zeros(total, len(nets), dtype=self.weight.dtype)
        r = 0
        for k, net in enumerate(nets):
            a[r : r + net.width, k] = net.output[:, 0] / math.sqrt(net.width)
            r += net.width
        self.a: torch.Tensor
        self.register_buffer("a", a)
        self.widths = [n.width for n in nets]

    def forward(self, xt: torch.Tensor) -> torch.Tensor:
        return torch.relu(xt @ self.weight.T) @ self.a


def train_fused(
    model: Fused, xt: torch.Tensor, y: torch.Tensor, cfg: TrainSpec, gen: torch.Generator
) -> None:
    """The loop of ``engine.train.train`` (same batches, optimiser and per-step loss
    read-out), with the K widths' losses summed."""
    n = xt.shape[0]
    bs = min(cfg.batch_size, n)
    opt = _optimizer(model, cfg)
    for _ in range(cfg.epochs):
        order = torch.randperm(n, generator=gen)
        for start in range(0, n, bs):
            idx = order[start : start + bs]
            out = model(xt[idx])
            loss = torch.stack(
                [data_loss(out[:, k : k + 1], y[idx]) for k in range(out.shape[1])]
            ).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            float(loss.detach())  # the loop reads the loss every step (divergence check)


def rel_diff(fused: Fused, sep: list[TwoLayerNet]) -> float:
    """max |W_fused − W_separate| / max |W_separate| over every width's weights."""
    w_sep = torch.cat([n.weight.detach() for n in sep])
    return float((fused.weight.detach() - w_sep).abs().max() / w_sep.abs().max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="mnist", choices=sorted(CLASSES))
    ap.add_argument("--n-train", type=int, default=500)
    ap.add_argument("--widths", default=",".join(map(str, DEFAULT_WIDTHS)))
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    a = ap.parse_args()
    widths = [int(w) for w in a.widths.split(",")]
    root = None if a.dataset == "digits" else str(Path(a.data_dir) / a.dataset)
    ds = load_dataset(
        a.dataset, root=root, classes=CLASSES[a.dataset], n_train=a.n_train, n_test=10, seed=0
    )
    x = ds.x_train_raw.to(torch.float32)
    y = ds.y_train.to(torch.float32)
    cfg = TrainSpec(epochs=a.epochs)
    d = x.shape[1]

    def nets() -> list[TwoLayerNet]:
        return [TwoLayerNet(d, w, 1, seed=0) for w in widths]

    t_sep, t_fused = [], []
    for _ in range(a.repeat):
        sep = nets()
        t0 = time.perf_counter()
        for net in sep:
            for _ in train(net, x, y, cfg, generator=torch.Generator().manual_seed(0)):
                pass
        t_sep.append(time.perf_counter() - t0)
        fused = Fused(nets())
        t0 = time.perf_counter()
        train_fused(fused, sep[0].features(x), y, cfg, torch.Generator().manual_seed(0))
        t_fused.append(time.perf_counter() - t0)
    diff32 = rel_diff(fused, sep)
    # exactness in float64, where rounding cannot be amplified by Adam's normalisation
    c64 = TrainSpec(epochs=min(3, a.epochs))
    x64, y64 = ds.x_train_raw.to(torch.float64), ds.y_train.to(torch.float64)
    sep64 = [TwoLayerNet(d, w, 1, seed=0, dtype=torch.float64) for w in widths]
    fused64 = Fused(sep64)
    for net in sep64:
        for _ in train(net, x64, y64, c64, generator=torch.Generator().manual_seed(0)):
            pass
    train_fused(fused64, sep64[0].features(x64), y64, c64, torch.Generator().manual_seed(0))
    diff64 = rel_diff(fused64, sep64)
    s, f = statistics.median(t_sep), statistics.median(t_fused)
    print(
        f"{a.dataset} {CLASSES[a.dataset]} n {a.n_train} d {d}, widths {a.widths} "
        f"({sum(widths)} units), {a.epochs} epochs, batch {cfg.batch_size}, "
        f"{torch.get_num_threads()} threads, median of {a.repeat}"
    )
    print(f"one cell per width {s:.2f} s, fused {f:.2f} s: fused / separate {f / s:.2f}")
    print(
        f"max relative weight difference fused vs separate: {diff64:.1e} in float64 "
        f"({c64.epochs} epochs; exact up to rounding), {diff32:.1e} in float32 after "
        f"{a.epochs} epochs (rounding, amplified by Adam's per-element normalisation)"
    )


if __name__ == "__main__":
    main()
