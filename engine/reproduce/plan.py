"""The reproduction's plan: which run (part) each data set, task and table needs, from a
base spec and a preset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.reproduce.presets import apply_quick, cap_sizes
from engine.run.spec import DataSpec, RunSpec

BINARY_CLASSES: dict[str, tuple[int, int]] = {
    "mnist": (3, 8),  # paper: MNIST 3 vs 8
    "cifar10": (1, 0),  # paper: automobile vs airplane
    "fashion-mnist": (0, 6),  # ours: T-shirt/top vs shirt (the supplement does not say)
    "digits": (3, 8),  # ours, as MNIST
}


GRID_RIDGES = ("lambda", "objective")
"""Claim 3's sensitivity grid on the binary subsets: the literal λ vs the objective ridge …"""


GRID_RANKINGS = ("abs_mean", "abs_signed_mean")
"""… × mean |I| (the earlier default) vs |mean I| (PAPER.md §6a)."""


GD_SWEEP: dict[str, Any] = {"train__optimizer": "gd", "train__lr": 1.0, "model__sigma_w": 1.0}
"""Claim 1's second sweep (binary subset): full-batch GD, lr 1, σ_w = 1, the settings of
sample_data/configs/ntk_digits_3v8_sigma1_gd.toml (tests check they agree)."""


@dataclass(frozen=True)
class Part:
    """One sub-run of a reproduction: a data subset and the experiments it feeds."""

    key: str
    """Sub-folder name, e.g. ``mnist-multiclass``."""
    dataset: str
    task: str
    """multiclass (10-class tables 1, 2, 4) or binary (table 3)."""
    spec: RunSpec
    role: str = "main"
    """main, or gd: claim 1's full-batch GD sweep on the binary subset."""
    note: str = ""
    """One line when the subset sizes were capped to what the data set has (``cap_sizes``)."""


def _binary_data(name: str, data_dir: str | None, base: RunSpec) -> tuple[DataSpec, str]:
    """The binary subset of ``name`` (its ``BINARY_CLASSES`` pair, sizes capped to what a
    one-split data set holds) and the note saying so, for the binary and GD parts."""
    n_tr, n_te, note = _binary_sizes(name, base.data.n_train, base.data.n_test)
    data = DataSpec(
        name=name,
        data_dir=data_dir,
        classes=BINARY_CLASSES.get(name, (0, 1)),
        n_train=n_tr,
        n_test=n_te,
        transductive=base.data.transductive,
        center=base.data.center,
    )
    return data, note


def plan(
    datasets: tuple[str, ...],
    *,
    tables: tuple[int, ...] = (1, 2, 3, 4),
    seeds: tuple[int, ...] | None = None,
    quick: bool = False,
    data_dir: str | None = None,
    device: str = "auto",
    base: RunSpec | None = None,
    overrides: dict[str, Any] | None = None,
) -> list[Part]:
    """The sub-runs that compute ``tables`` (and κ, the dual implication and the
    landscape, always) for each data set. Each trains each model × width × seed once.
    ``overrides`` (``section__field`` keys) apply after the --quick preset."""
    base = base or RunSpec()
    if quick:
        base = apply_quick(base)
    base = base.replace(device=device, **(overrides or {}))
    if seeds is not None:  # None: the preset's seeds (--quick: one), else the spec's
        base = base.replace(seeds=seeds)
    parts = []
    for name in datasets:
        multi = ["spectrum", "landscape"]
        if 1 in tables:
            multi.append("ntk")
        if 2 in tables or 4 in tables:
            multi.append("flip")
        if 4 in tables:
            multi.append("advtrain")
        data = DataSpec(
            name=name,
            data_dir=data_dir,
            classes=None,
            n_train=base.data.n_train,
            n_test=base.data.n_test,
            transductive=base.data.transductive,
            center=base.data.center,
        )
        parts.append(
            Part(
                f"{name}-multiclass",
                name,
                "multiclass",
                base.replace(experiment=",".join(multi), data=data),
            )
        )
        if 3 in tables:
            bdata, note = _binary_data(name, data_dir, base)
            bspec = base.replace(experiment="spectrum,flip", data=bdata)
            if not (
                base.flip.ridges or base.flip.rankings
            ):  # the sensitivity grid (README claim 3)
                bspec = bspec.replace(flip__ridges=GRID_RIDGES, flip__rankings=GRID_RANKINGS)
            parts.append(Part(f"{name}-binary", name, "binary", bspec, note=note))
        if 1 in tables:  # claim 1 under full-batch GD beside the paper's Adam (README claim 1)
            gdata, note = _binary_data(name, data_dir, base)
            gspec = base.replace(experiment="ntk", data=gdata, **GD_SWEEP)
            parts.append(Part(f"{name}-binary-gd", name, "binary", gspec, role="gd", note=note))
    return parts


def _binary_sizes(name: str, n_train: int, n_test: int) -> tuple[int, int, str]:
    """Two classes of a one-split data set (digits: ~180 images a class) cannot give the
    10-class sizes: ``presets.cap_sizes`` for two classes (sizes and its one-line note)."""
    s = cap_sizes(name, 2, n_train, n_test)
    return s.n_train, s.n_test, s.note
