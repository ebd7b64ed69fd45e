"""Named presets. ``--quick``: a small run that finishes in well under a minute."""

from __future__ import annotations

from engine.experiments.spec import RunSpec

QUICK = {
    "data__n_train": 300,
    "data__n_test": 100,
    "model__widths": (16, 64, 256, 1024),
    "train__epochs": 30,
    "ntk__drift_every": 5,
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
"""The --quick preset (README "Presets"): n_train 300, n_test 100, widths 16/64/256/1024,
30 epochs, one seed, width 256 for flip and landscape, PGD 10 steps, MIM 5 steps,
coarser landscape grids; influence_check removes 10 top + 10 random points."""


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
