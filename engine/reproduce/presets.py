"""Named presets. ``--quick``: a small run that finishes in a minute or two per data set.

The quick preset is chosen by measurement (the step count, not the epoch count, is what
decides convergence): see ``QUICK``'s docstring for the numbers and the commands.
"""

from __future__ import annotations

from typing import NamedTuple

from engine.run.spec import RunSpec

QUICK = {
    "data__n_train": 300,
    "data__n_test": 100,
    "model__widths": (16, 32, 64, 256, 1024),
    "train__epochs": 200,
    "train__batch_size": 32,
    "ntk__drift_every": 20,
    "ntk__drift_points": 128,
    "flip__width": 256,
    "flip__pgd_steps": 10,
    "flip__mim_steps": 5,
    "landscape__width": 256,
    "landscape__points_1d": 21,
    "landscape__points_2d": 11,
    "landscape__hessian_iters": 30,
    "landscape__hutchinson_samples": 20,
    "influence_check__top": 10,
    "influence_check__random": 10,
    "seeds": (0,),
    "data__center": True,
    "train__until": "converged",
    "train__max_epochs": 900,
    "quick": True,
}
"""The --quick preset (docs/benchmarks.md#quick-preset): n_train 300, n_test 100 (capped to what a
one-split data set has, ``cap_sizes``), widths 16/32/64/256/1024 (five: four widths
cannot reach p < 0.05 in claim 1's exact Spearman test with one seed), at least 200 epochs at
batch 32 (10 Adam steps an epoch; the paper's lr 1e-3 and L2) and then until converged
(``train.until``, checked every 10 epochs, cap 900: on 10-class digits
(``malleability headless --dataset digits --experiment train --quick``) the slowest cells
stop at 830 (MLP-Attn m = 16) and 810 (2L-ReLU m = 16), m = 32 at 640, m = 64 at
450 / 430, m ≥ 256 at 200-220 (the guard alone, before ``engine.train.until`` also read
a 20 % window, stopped them at 500 / 550, 390 / 410, 260 / 270 and 200), and 900 keeps the estimate of `--quick --experiment all` under the 10 min that asks
to confirm), per-pixel centring (``data.center``,
not the paper's: ``quick_departures`` says so before a run), one seed, width 256 for flip
and landscape, PGD 10 steps (α = 2.5·ε/10), MIM 5 steps, coarser landscape grids;
influence_check removes 10 top + 10 random points.

Why centring and until-converged: ``python benchmarks/bench_quick_convergence.py
--presets paper-quick,center-until --datasets digits,mnist,fashion-mnist,cifar10
--data-root ../shared/data --cells`` (train cells only, one seed; converged cells of 4
per task × model, best test accuracy; 2 shared CPU cores at load 2–4):

* paper-quick (uncentred, 200 epochs): 2L-ReLU / MLP-Attn converged
  digits 10-class 2/4, 0/4 (MLP-Attn best 0.34, at chance at m = 16); digits 3 vs 8 4/4,
  0/4 (0.96); MNIST 10-class 3/4, 0/4 (0.51); MNIST 3 vs 8 4/4, 0/4 (0.89);
  Fashion-MNIST 10-class 3/4, 1/4 (0.30); Fashion 0 vs 6 2/4, 0/4 (0.82); CIFAR-10
  10-class 2/4, 0/4 and at chance in all 4 (0.10); CIFAR-10 automobile vs airplane 2/4,
  0/4 at chance in all 4 (0.50). 2L-ReLU fails at the narrow widths only.
* centred, until converged (cap 1000): every cell of every task converges (64 of 64);
  best test accuracy 2L-ReLU / MLP-Attn: digits 0.99 / 0.94 and 1.00 / 1.00, MNIST
  0.88 / 0.74 and 0.96 / 0.94, Fashion 0.71 / 0.57 and 0.81 / 0.81, CIFAR-10 0.29 / 0.21
  and 0.89 / 0.77. One cell is at chance: CIFAR-10 10-class MLP-Attn m = 16 (test 0.14
  of 100; ``KNOWN_FAILURES`` says so before such a run). The guard (alone, the rule
  then) stopped most cells at the first check (200 epochs); the narrow ones later (digits 10-class 2L-ReLU m = 16 at
  550, m = 64 at 270; MLP-Attn 500 and 260; MNIST 10-class m = 16 at 280 / 260).
* centred at a fixed 200 epochs (``--presets center``, digits): 3 vs 8 converges
  everywhere, 10-class only at m = 256, 1024 for both models: the budget, not the widths,
  is what the guard decides.
* Seconds (train, both models, 4 widths): digits 47 + 14, MNIST 38 + 39, Fashion 29 + 30,
  CIFAR-10 118 + 77 (10-class + binary).

How the batch and the epoch floor were chosen earlier, uncentred and at fixed epochs
(the bench then took ``--batch`` and ``--at``: commit b81b1f2's version of
``benchmarks/bench_quick_convergence.py``; 2 shared CPU cores, load ≈ 3.5):

* Steps, not epochs. ``python benchmarks/bench_quick_convergence.py --datasets digits
  --batch 128 --at 200,600``: at the paper's batch 128, 300 points are 3 steps an epoch;
  200 epochs (600 steps) converge no 2L-ReLU width on 10-class digits (m = 1024 still
  makes 1.0 % of its decrease in the last 10 %), 600 epochs converge m = 256 and 1024.
  ``--batch 32 --at 100,200,300`` gives the same cells at 200 epochs (2000 steps) for a
  third of the arithmetic: m = 256, 1024 (10-class); every width on 3 vs 8 (228 points).
  ``--datasets mnist,cifar10 --data-root ../shared/data --batch 32 --at 100,200``
  (171 s CPU): MNIST 2L-ReLU m ≥ 256 by 100 epochs and m = 64 by 200 (10-class), every
  width by 100 (3 vs 8); CIFAR-10 m = 256, 1024 by 100 (10-class), m = 64, 256 by 200
  on automobile vs airplane, where batch-32 noise undoes m = 1024 (loss 0.35 at 100
  epochs, 0.40 at 200: not settled).
* 2L-ReLU at m = 16 needs far more: ≥ 2000 epochs at batch 128 on 10-class digits,
  ≈ 1000 on 10-class MNIST and CIFAR-10 (Adam's step moves a narrow net's output less).
* MLP-Attn does not converge on any of these subsets in a quick budget and no batch
  size or epoch count tried fixes it: its features Cx/‖Cx‖ are nearly parallel on
  uncentred images, so its loss crawls (10-class digits: 2.303 → 2.251 in 2000 epochs
  at batch 128, still making 1.6 % of its decrease in the last 10 %; smaller batches
  are slower still, the class signal drowning in batch noise), and on CIFAR-10 it stays
  at 2.303 and at chance. Larger learning rates (1e-2, 5e-2) leave it at chance on
  10-class digits. ``--center`` (``data.center``) is what makes it train; the preset
  then kept the paper's uncentred inputs and the guards said which cells did not converge.
* ``malleability headless --experiment ntk --quick`` per data set (converged cells of
  4; wall / CPU seconds): digits 10-class 2L-ReLU 2 (m = 256, 1024), MLP-Attn 0, one at
  chance, 57 / 32 s; digits 3 vs 8 2L-ReLU 4, MLP-Attn 0, 36 / 25 s; MNIST 10-class
  (``--data-dir ../shared/data/mnist``) 2L-ReLU 3 (not m = 16), MLP-Attn 0, 78 / 70 s;
  MNIST 3 vs 8 2L-ReLU 4, MLP-Attn 0 (train loss 0.47–0.61, test 0.86–0.89), 92 / 85 s;
  CIFAR-10 10-class (``--data-dir ../shared/data/cifar10``) 2L-ReLU 2 (m = 256, 1024),
  MLP-Attn 0 and at chance in all 4, 300 / 323 s (d = 3072: four times MNIST's
  arithmetic an epoch); CIFAR-10 automobile vs airplane (``--classes 1,0``) 2L-ReLU 2
  (m = 64, 256), MLP-Attn 0 and at chance in all 4, 430 / 326 s. So about a minute
  on digits and MNIST, five on CIFAR-10.
* The init → trained interpolation's minimum of the training objective
  (``--experiment landscape --quick``, ``interp_min_t``) sits at t = 1.00 for 2L-ReLU
  on all four digits/MNIST tasks; for MLP-Attn at 1.25 (the end of the grid: still
  descending) on digits and at 1.00 on MNIST, its cells flagged not converged anyway.
"""


KNOWN_FAILURES: dict[tuple[str, tuple[int, ...] | None, bool, bool], str] = {
    ("cifar10", None, True, True): (
        "measured: CIFAR-10 10-class MLP-Attn m=16 converges but stays at chance (test 0.14 of 100)"
    ),
    ("cifar10", (1, 0), False, False): (
        "measured: uncentred MLP-Attn stays at its initial output on CIFAR-10 1 vs 0\n"
        "(1000 epochs, 3 seeds: loss 1.00, at chance; centred it trains:\n"
        "docs/benchmarks.md#verdicts)"
    ),
}
"""(data set, classes, centred, quick) → the cells that measurement saw fail a guard:
the --quick preset's (``benchmarks/bench_quick_convergence.py``, centred, until
converged) and the full preset's (docs/protocol.md#evidence: n 500, m 1024, 500 epochs, seed 0; again
with ``malleability headless --config sample_data/configs/flip_cifar10_1v0_grid.toml
--data-dir ../shared/data/cifar10``: until converged, cap 1000, seeds 0-2, train loss
1.00-1.005 and at chance in every seed)."""


def known_failure(spec: RunSpec) -> str:
    """The one line saying which cells of a run like ``spec`` measurement saw fail a
    guard, '' when none is known (a --quick run: only centred until converged was measured)."""
    if spec.quick and not (spec.data.center and spec.train.until == "converged"):
        return ""
    return KNOWN_FAILURES.get((spec.data.name, spec.data.classes, spec.data.center, spec.quick), "")


def quick_departures(spec: RunSpec) -> str:
    """The line a --quick run prints before it starts (one line of at most 74 characters,
    so "note: " + it fits 80 columns): where its spec departs from the paper's protocol
    beyond sizes and budget ('' for none). Why, with the measurement, is in
    docs/benchmarks.md#quick-preset; a known unconverged cell follows on a line of its own."""
    parts = []
    if spec.data.center:
        parts.append("centred inputs")
    if spec.train.until == "converged":
        parts.append(f"until converged (cap {max(spec.train.max_epochs, spec.train.epochs)})")
    line = "quick preset, unlike the paper: " + ", ".join(parts) if parts else ""
    if known := known_failure(spec):
        line += "\n" + known
    return line


def scale_departures(name: str, spec: RunSpec) -> str:
    """The lines (each at most 74 characters, so "note: " + it fits 80 columns) a run at
    scale ``name`` prints before it starts: where its spec departs from the paper and
    from the project's own defaults beyond sizes and budget ('' for none); why is in
    ``DATA_SCALE``'s docstring."""
    lines = []
    if spec.train.until == "converged":
        cap = max(spec.train.max_epochs, spec.train.epochs)
        lines.append(f"--scale {name}, unlike the paper: until converged (cap {cap})")
    adv = spec.flip.adv_steps
    if spec.flip.adv_recipe == "pgd" and adv is not None and adv < spec.flip.pgd_steps:
        lines.append(
            f"--scale {name}: adversarial training by {adv} PGD steps, "
            f"not the attack's {spec.flip.pgd_steps}"
        )
    return "\n".join(lines)


class Sizes(NamedTuple):
    """Class-balanced subset sizes after ``cap_sizes``, and the one line saying so ('' if unchanged)."""

    n_train: int
    n_test: int
    note: str


def cap_sizes(name: str, n_classes: int | None, n_train: int, n_test: int) -> Sizes:
    """Sizes a one-split data set can give ``n_classes`` classes (None: all of them): train
    + test at most 85 % of those classes' share of the images, in the same ratio (digits
    3 vs 8: ≈ 180 images a class → 305). Data sets with a test split are left as asked."""
    try:
        from engine.data import DATASETS

        info = DATASETS[name]
    except (ImportError, KeyError):
        return Sizes(n_train, n_test, "")
    if set(info.splits) != {"all"}:
        return Sizes(n_train, n_test, "")
    k = len(info.class_names)
    cap = int(0.85 * min(n_classes or k, k) * info.splits["all"] / max(k, 2))
    if n_train + n_test <= cap:
        return Sizes(n_train, n_test, "")
    n_tr = max(2, cap * n_train // (n_train + n_test))
    n_te = max(2, cap - n_tr)
    note = (
        f"{name} has about {info.splits['all'] // max(k, 1)} images a class: n_train {n_train} → {n_tr}, "
        f"n_test {n_test} → {n_te} (train + test ≤ 85% of the {n_classes or k} classes' images)"
    )
    return Sizes(n_tr, n_te, note)


def cap_source_sizes(spec: RunSpec) -> Sizes:
    """``cap_sizes`` for a data source (npz:/folder:/hf:), from its class counts: with
    train and test splits each size at most the smallest chosen class × K; with one split
    train + test at most 85 % of it, in the asked ratio. A source that does not read is
    left as asked (the pre-run check then names its problem)."""
    from engine.data import subset_counts
    from engine.errors import DatasetError

    d = spec.data
    try:
        counts = subset_counts(d.name, source=d.source_options())
    except DatasetError:
        return Sizes(d.n_train, d.n_test, "")
    cl = list(d.classes) if d.classes else list(range(len(counts.class_names)))
    if any(c >= len(counts.class_names) for c in cl):
        return Sizes(d.n_train, d.n_test, "")
    k = len(cl)
    if "train" in counts.splits and "test" in counts.splits:
        n_tr = min(d.n_train, k * min(counts.splits["train"][c] for c in cl))
        n_te = min(d.n_test, k * min(counts.splits["test"][c] for c in cl))
    else:
        (only,) = counts.splits
        cap = int(0.85 * k * min(counts.splits[only][c] for c in cl))
        if d.n_train + d.n_test <= cap:
            return Sizes(d.n_train, d.n_test, "")
        n_tr = max(2, cap * d.n_train // (d.n_train + d.n_test))
        n_te = max(2, cap - n_tr)
    if (n_tr, n_te) == (d.n_train, d.n_test):
        return Sizes(n_tr, n_te, "")
    note = f"{d.name}: n_train {d.n_train} → {n_tr}, n_test {d.n_test} → {n_te} (what its classes hold)"
    return Sizes(n_tr, n_te, note)


def apply_quick(spec: RunSpec) -> RunSpec:
    """``spec`` with the --quick preset applied."""
    return spec.replace(**QUICK)


def paper_settings(spec: RunSpec) -> RunSpec:
    """``spec`` with every option the quick preset changes back at its default (the paper's
    settings where it states them: widths 4…4096, 500 epochs, three seeds, ...)."""
    default = RunSpec()
    changes: dict[str, object] = {}
    for key in QUICK:
        section, _, name = key.partition("__")
        changes[key] = (
            getattr(getattr(default, section), name) if name else getattr(default, section)
        )
    return spec.replace(**changes)


def cap_quick(spec: RunSpec) -> tuple[RunSpec, str]:
    """A --quick ``spec`` with its subset sizes capped to what its data set and classes
    have (``cap_sizes``), and the one-line note ('' when nothing changed)."""
    d = spec.data
    from engine.data import is_source

    if is_source(d.name):
        s = cap_source_sizes(spec)
    else:
        s = cap_sizes(d.name, len(d.classes) if d.classes else None, d.n_train, d.n_test)
    if not s.note:
        return spec, ""
    return spec.replace(data__n_train=s.n_train, data__n_test=s.n_test), s.note


IDLE_FLOPS = 3e11
"""The matmul probe's rate on 2 idle cores (``engine.experiments.estimate.probe_flops``), FLOP/s."""
FUSED_OVERHEAD = 1.2
"""Wall time over the FLOP floor expected of the fused trainer (per-step overhead mostly gone)."""
SCALE_BUDGET_S = 3600.0
"""What one data set under one protocol may take at a declared scale: one sitting."""

DATA_SCALE: dict[str, object] = {
    "model__widths": (16, 64, 256, 1024, 4096),
    "seeds": (0, 1, 2),
    "train__until": "converged",
    "train__epochs": 200,
    "train__max_epochs": 1000,
    "train__batch_size": 32,
    "flip__adv_steps": 10,
}
"""``reproduce --scale data``: the paper's data sets at a size one sitting holds
(docs/guide.md). Widths 16…4096 (claim 1's sweep), three seeds (claims 3, 4 and 6 need a
spread), until converged from 200 epochs (cap 1000) at batch 32 (the --quick preset's
measured choice: steps, not epochs, decide convergence; docs/benchmarks.md#quick-preset),
both protocols; sizes per data set in ``DATA_SIZES``.

How it was chosen: the estimate's FLOP floor (``engine.experiments.estimate.breakdown``)
at the idle 2-core matmul probe (``IDLE_FLOPS``, 3e11 FLOP/s) times ``FUSED_OVERHEAD``
(1.2: the fused trainer removes most per-step overhead) must stay within
``SCALE_BUDGET_S`` (60 min) per data set and protocol (a test holds it). With the
paper's PGD adversarial training (40 steps) Table 4's part alone was 1977 s of a 3053 s
floor on MNIST at n_train 500 (61 min at 1.2×); ``flip.adv_steps`` 10 (PGD still, α by
the same rule) brings it to 531 s (its effect on claim 4, measured on digits:
docs/claims.md#claim-4-steps). Then MNIST and Fashion-MNIST at n_train 800 floored at
≈ 43 min (≈ 51 min at 1.2×), CIFAR-10 (d = 3072, four times MNIST's arithmetic a step)
at n_train 200 at 42 min (50 min; 250 would be 63), digits at n_train 1000 in about
3 minutes. Those floors counted each fused linearized twin's FLOPs twice; counted once
(``engine.experiments.work.FUSED_TWIN``), every floor is lower and the sizes are
unchanged: MNIST at n_train 500 2712 s with PGD-40 (54 min at 1.2×; Table 4's part
unchanged), MNIST and Fashion-MNIST ≈ 34 min (≈ 41 at 1.2×), CIFAR-10 33 min (40; 250
would be 50), digits ≈ 2.7 min. The widths' 4096 and the epoch cap are what the floor
scales with: a cell that converges early costs less, so the floor is an upper bound.
The current floors (and Table 4's 1977 − 531 s) are recomputed by ``pytest
tests/engine/reproduce/test_scale.py``; ``scale_departures`` says before the run where
the scale departs (until converged; the shorter PGD training)."""

DATA_SIZES: dict[str, tuple[int, int]] = {
    "mnist": (800, 200),
    "fashion-mnist": (800, 200),
    "cifar10": (200, 100),
    "digits": (1000, 300),
}
"""(n_train, n_test) of ``--scale data`` per data set (``DATA_SCALE``'s docstring)."""

SCALES = {"data": DATA_SCALE}


def scale_overrides(name: str, dataset: str) -> dict[str, object]:
    """The ``section__field`` changes of scale ``name`` for ``dataset`` (sizes included)."""
    from engine.errors import ConfigError

    if name not in SCALES:
        raise ConfigError("scale", name, " or ".join(SCALES))
    n_train, n_test = DATA_SIZES.get(dataset, (800, 200))
    return {**SCALES[name], "data__n_train": n_train, "data__n_test": n_test}
