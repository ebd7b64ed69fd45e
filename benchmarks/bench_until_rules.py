"""Candidate until-converged stopping rules, replayed on epoch-loss histories.

The stopping rule of ``train.until = "converged"`` is a pure function of the epoch-mean
losses so far (``engine.train.until.stop_now``), so candidates can be replayed offline on
histories of cells trained to a fixed cap. For each cell of each RUN (a run directory of
the ``train`` experiment with fixed epochs; its events.jsonl holds every epoch's
``train_loss``) and each rule this prints the epoch where the rule stops (checks at
``epochs`` = 100, then every 10, as the sample configs) and the gap left to the cap:

    gap = (last(stop) - last(cap)) / (L_1 - last(cap))

where last(E) is the guard's own "last window" (the mean of the last ⌈0.1·E⌉ epoch
losses up to epoch E) and L_1 the first epoch's loss: the share of the decrease the cap
reaches that stopping there leaves unmade (negative: noise, the stop is as low as the
cap). "-" when the rule does not stop within the history (it would run to the cap).

The histories: the flip configs' cells (MNIST 3 vs 8 and 10-class, n 1000 / 200; CIFAR-10
1 vs 0, n 500; m 1024, both models, seeds 0-2) and the quick preset's on 10-class digits
(centred, n 300 / 100, batch 32, widths 16-1024, seed 0; its checks start at 200),
``train`` runs of fixed epochs (benchmarks/until_histories/*.toml):

    H=benchmarks/until_histories; M="--data-dir ../shared/data/mnist"
    malleability headless --config $H/mnist_3v8.toml $M --out h38p
    malleability headless --config $H/mnist_10class.toml $M --out h10p
    malleability headless --config $H/mnist_3v8.toml $M --center --epochs 600 --out h38c
    malleability headless --config $H/mnist_10class.toml $M --center --epochs 600 --out h10c
    malleability headless --config $H/cifar10_1v0.toml --data-dir ../shared/data/cifar10 \
        --center --out hc10c
    malleability headless --config $H/digits_quick.toml --out hdig
    python benchmarks/bench_until_rules.py h38p h10p h38c h10c hc10c hdig@200

(the uncentred MNIST runs took 14 min each, two at once, at load 4-5 on 2 shared cores).

Measured (uncentred MNIST MLP-Attn, the 6 crawling cells): the guard at one check stops
them at 100-140 with 4-13 % of the decrease left; at 2 / 3 consecutive checks 2-14 % /
2-10 %; with the noise bound up to 14 %; with windows of at least 50 epochs up to 4 %
(but +20-30 epochs on every MNIST cell flat by the first check); on a 20 % window alone
up to 5 %; on both the 10 % and the 20 % window (the rule now) 1-3 %, at 220-430
epochs. It costs nothing on 23 of the 24 other MNIST and CIFAR-10 cells (2L-ReLU, and
all centred ones) and 10 epochs on the last (centred CIFAR-10 MLP-Attn, seed 0); on the
quick digits cells still settling at the first check, about 1.5x (260-550 -> 430-830 epochs; 4630 epochs in all against 3180).
Their first epochs equal the flip runs' cells bit for bit: the same subset, init and
batch order. A gap of a few % on centred CIFAR-10 is noise: its loss is flat from epoch
50 on (0.61 +- 0.01), and the 11-epoch window at a stop at 110 moves by that much.

Stuck at the start ("+stuck", ``engine.train.until.stuck``: the guard says "never left its
initial loss" and the 20 % window's prev − last is within its noise bound; "+stuck1%":
within ``MIN_DROP``·ref instead). Histories:

    # live until-converged runs (checks from 200; adversarial ε 0.3): their run directories'
    # fashion-mnist-multiclass/ and cifar10-multiclass/ (events.jsonl with spec.toml), from
    malleability reproduce --dataset fashion-mnist --scale data --protocols paper --out fashion
    malleability reproduce --dataset cifar10 --data-dir ../shared/data/cifar10 \
        --scale data --protocols centred --out cifar10
    malleability headless --config $H/mnist_3v8.toml $M --models attn,relu --seeds 0 \
        --n-train 500 --lr LR --epochs 400 --out hlowlrN      # LR 3e-5, 1e-5, 3e-6
    malleability headless --config $H/digits_slow_1e-4_1e-4.toml --out hslow_1e-4_1e-4
    malleability headless --config $H/digits_slow_1e-3_3e-5.toml --out hslow_1e-3_3e-5
    malleability headless --config $H/digits_adv.toml --out hadvdig
    python benchmarks/bench_until_rules.py --stuck \
        fashion/fashion-mnist-multiclass@200 cifar10/cifar10-multiclass@200 hdig@200 \
        h38p hlowlr hlowlr5 hlowlr6 \
        hslow_1e-4_1e-4@200 hslow_1e-3_3e-5@200 hadvdig     # and again all @10

Measured (38 cells, and 3 more: the first cell of h38p, h10p and hc10c above, each run
cut at 470 s; checks from 10: 35): the three adversarial cells at the zero
predictor's loss (ln 10 = 2.303; 2L-ReLU Fashion-MNIST 2.324 -> 2.305 over 1000 epochs,
MLP-Attn Fashion-MNIST 2.306 at 236, MLP-Attn CIFAR-10 2.386 at 284) stop as stuck at the
first check, 200, where the rule before ran them to the cap (1000): 920 epochs saved on
these histories, about 800 a cell at the cap. Every other cell stops where "10+20%" does.
Cells the guard calls never-left at some check: 4 (checks from 10: 9), of which 1 (9)
leave their start later; "+stuck" stops none of them, "+stuck1%" all (e.g. uncentred
MNIST MLP-Attn at lr 3e-6: 0.9998, 0.9916 at epoch 100, 0.9686 at 400, a steady crawl
that "+stuck1%" stops at 100). Each run took 0.5-8 min here, two at once, load 2-7.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.results.guards import MIN_DROP, TOL, WINDOW, converged, convergence, windows
from engine.run.runs import train_curves
from engine.train.until import NEVER_LEFT, STOP_WINDOW, may_stop, stuck

Rule = Callable[[Sequence[float], float | None, list[int]], bool]
"""(losses so far, baseline, the check epochs so far) -> stop here."""


def _once(losses: Sequence[float], base: float | None, checks: list[int]) -> bool:
    return converged(losses, baseline=base)


def _k_checks(k: int) -> Rule:
    def rule(losses: Sequence[float], base: float | None, checks: list[int]) -> bool:
        return len(checks) >= k and all(converged(losses[:e], baseline=base) for e in checks[-k:])

    return rule


def _window(frac: float) -> Rule:
    def rule(losses: Sequence[float], base: float | None, checks: list[int]) -> bool:
        return convergence(losses, baseline=base, window=frac).converged

    return rule


def _windows(losses: Sequence[float]) -> tuple[float, float, float, int]:
    """prev, last, noise (2·SE of their difference) and w, as the guard reads them."""
    e = len(losses)
    w = max(2, math.ceil(WINDOW * e))
    a, b = list(losses[e - 2 * w : e - w]), list(losses[e - w :])
    ma, mb = sum(a) / w, sum(b) / w
    va = sum((x - ma) ** 2 for x in a) / (w - 1)
    vb = sum((x - mb) ** 2 for x in b) / (w - 1)
    return ma, mb, 2.0 * math.sqrt(va / w + vb / w), w


def _noise_bound(losses: Sequence[float], base: float | None, checks: list[int]) -> bool:
    """The guard, with the window's decrease taken at its upper 2·SE bound."""
    if not converged(losses, baseline=base):
        return False
    prev, last, noise, _ = _windows(losses)
    return prev - last + noise <= TOL * (losses[0] - last)


def _min_epochs(n: int) -> Rule:
    def rule(losses: Sequence[float], base: float | None, checks: list[int]) -> bool:
        """The guard, and again with windows of at least ``n`` epochs."""
        frac = max(WINDOW, n / len(losses))
        return converged(losses, baseline=base) and converged(losses, baseline=base, window=frac)

    return rule


def _may_stop(losses: Sequence[float], base: float | None, checks: list[int]) -> bool:
    return may_stop(losses, base)


def _stuck_min_drop(losses: Sequence[float], base: float | None) -> bool:
    """Stuck, the trend read against ``MIN_DROP``·ref instead of the noise bound."""
    got = windows(losses, STOP_WINDOW)
    if convergence(losses, baseline=base).reason != NEVER_LEFT or got is None:
        return False
    ref = losses[0] if base is None else min(losses[0], base)
    return got[0] - got[1] <= MIN_DROP * abs(ref)


def _or_stuck(stuck_rule: Callable[[Sequence[float], float | None], bool]) -> Rule:
    def rule(losses: Sequence[float], base: float | None, checks: list[int]) -> bool:
        """The rule now, or stopped as stuck at its start."""
        return may_stop(losses, base) or stuck_rule(losses, base)

    return rule


RULES: dict[str, Rule] = {
    "once": _once,
    "2 chk": _k_checks(2),
    "3 chk": _k_checks(3),
    "noise": _noise_bound,
    ">=50 ep": _min_epochs(50),
    "20 %": _window(0.2),
    "10+20%": _may_stop,
    "+stuck": _or_stuck(stuck),
    "+stuck1%": _or_stuck(_stuck_min_drop),
}
"""The guard at one check (the rule before), at 2 and 3 consecutive checks, with the
window's decrease at its upper 2·SE bound, also with windows of at least 50 epochs, on a
20 % window alone, and on both the
10 % and the 20 % window (``engine.train.until.may_stop``), and that or stopped as stuck at
its start (``engine.train.until.stuck``: never left its initial loss, no trend on the 20 %
window beyond the noise bound; or, "+stuck1%", beyond ``MIN_DROP``·ref): the rule now is
"+stuck" (``engine.train.until.stop_reason``)."""
STUCK_RULES = ("+stuck", "+stuck1%")


CRAWL = 0.03
"""A cell whose 'once' stop leaves more than this share of the decrease is a crawl."""


def last_window(losses: Sequence[float]) -> float:
    e = len(losses)
    w = max(2, math.ceil(WINDOW * e))
    return sum(losses[e - w :]) / w


def histories(run: Path) -> dict[str, list[float]]:
    """cell → its epoch losses (``engine.run.runs.train_curves``)."""
    return {cell: ys for cell, (_, ys) in train_curves(run).items()}


def baseline(run: Path, seed: int) -> float | None:
    """The constant predictor's loss on the run's training subset for ``seed``."""
    from engine.results import constant_loss
    from engine.run.context import RunContext
    from engine.run.spec import RunSpec

    try:
        ctx = RunContext(RunSpec.load(run / "spec.toml"))
        return constant_loss(ctx.dataset(seed=seed).y_train)
    except Exception:  # noqa: BLE001 - data absent: the guard then uses L_1
        return None


def stop_epoch(rule: Rule, losses: list[float], base: float | None, first: int) -> int | None:
    checks: list[int] = []
    for e in range(first, len(losses) + 1, 10):
        checks.append(e)
        if rule(losses[:e], base, checks):
            return e
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run directories; RUN@200: first check at 200")
    ap.add_argument("--stuck", action="store_true", help="only the rules that bear on stuck")
    a = ap.parse_args()
    rules = {n: r for n, r in RULES.items() if not a.stuck or n in ("once", "10+20%", *STUCK_RULES)}
    print(f"{'cell':<14}{'E':>5}{'L_cap':>6}" + "".join(f"{n:>9}" for n in rules))
    gaps: dict[str, list[float]] = {n: [] for n in rules}
    extra: dict[str, list[int]] = {n: [0, 0] for n in rules}  # [crawl cells, the others]
    wrong: dict[str, list[str]] = {n: [] for n in STUCK_RULES}
    at_start = [0, 0]  # cells the guard calls never-left at a check: [leave later, never]
    for arg in a.runs:
        path, _, at = arg.partition("@")
        run, first = Path(path), int(at or 100)
        print(f"{run.name} (checks from {first})")
        for cell, h in sorted(histories(run).items()):
            _, _, kind, width, seed = cell.split("/")[:5]
            base = baseline(run, int(seed))
            l1, lcap = h[0], last_window(h)
            ref = stop_epoch(_once, h, base, first) or len(h)
            crawl = (last_window(h[:ref]) - lcap) / (l1 - lcap) > CRAWL
            # a cell that leaves its start by the end of its history: never stuck
            leaves = convergence(h, baseline=base).reason != NEVER_LEFT
            checks = range(first, len(h) + 1, 10)
            if any(convergence(h[:e], baseline=base).reason == NEVER_LEFT for e in checks):
                at_start[0 if leaves else 1] += 1
            cols = []
            for n, rule in rules.items():
                e = stop_epoch(rule, h, base, first)
                extra[n][0 if crawl else 1] += (e or len(h)) - ref
                if e is None:
                    cols.append(f"{'-':>9}")
                    continue
                as_stuck = n in STUCK_RULES and not may_stop(h[:e], base)
                if as_stuck and leaves:
                    wrong[n].append(f"{run.name}:{kind} {width} {seed}")
                g = (last_window(h[:e]) - lcap) / (l1 - lcap)
                gaps[n].append(g)
                cols.append(f"{e:>4}{'S' if as_stuck else ''}{100 * g:>3.0f}%".rjust(9))
            name = f"{kind} {width} {seed}" + (" adv" if cell.endswith("adversarial") else "")
            print(f"{name:<14}{len(h):>5}{lcap:>6.3f}" + "".join(cols))
    print(f"over all cells ({CRAWL:.0%}: the gap that marks a crawl under 'once'; S: stuck):")
    rows = [
        ("largest gap", [f"{100 * max(gaps[n], default=math.nan):>8.0f}%" for n in rules]),
        ("extra ep. crawl", [f"{extra[n][0]:>9}" for n in rules]),
        ("extra ep. other", [f"{extra[n][1]:>9}" for n in rules]),
    ]
    for label, cols in rows:
        print(f"{label:<25}" + "".join(cols))
    print(f"cells at their start at some check: {sum(at_start)} ({at_start[0]} leave it later)")
    for n, cells in wrong.items():
        print(f"{n}: stopped as stuck, yet leave their start later: {len(cells)} {cells}")


if __name__ == "__main__":
    main()
