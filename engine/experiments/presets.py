"""Named presets. ``--quick``: a small run that finishes in a minute or two per data set.

The quick preset is chosen by measurement (the step count, not the epoch count, is what
decides convergence): see ``QUICK``'s docstring for the numbers and the commands.
"""

from __future__ import annotations

from typing import NamedTuple

from engine.experiments.spec import RunSpec

QUICK = {
    "data__n_train": 300,
    "data__n_test": 100,
    "model__widths": (16, 64, 256, 1024),
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
    "quick": True,
}
"""The --quick preset (README "Presets"): n_train 300, n_test 100 (capped to what a
one-split data set has, ``cap_sizes``), widths 16/64/256/1024, 200 epochs at batch 32
(10 Adam steps an epoch, 2000 in all; the paper's lr 1e-3), one seed, width 256 for flip
and landscape, PGD 10 steps (α = 2.5·ε/10), MIM 5 steps, coarser landscape grids; influence_check removes 10 top + 10 random points.
"""


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
        changes[key] = getattr(getattr(default, section), name) if name else getattr(default, section)
    return spec.replace(**changes)


def cap_quick(spec: RunSpec) -> tuple[RunSpec, str]:
    """A --quick ``spec`` with its subset sizes capped to what its data set and classes
    have (``cap_sizes``), and the one-line note ('' when nothing changed)."""
    d = spec.data
    s = cap_sizes(d.name, len(d.classes) if d.classes else None, d.n_train, d.n_test)
    if not s.note:
        return spec, ""
    return spec.replace(data__n_train=s.n_train, data__n_test=s.n_test), s.note
