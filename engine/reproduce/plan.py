"""The reproduction's plan: which run (part) each data set, task and table needs, from a
base spec and a preset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.errors import ConfigError
from engine.kinds import PROTOCOLS
from engine.reproduce.presets import apply_quick, cap_sizes, scale_overrides
from engine.run.spec import DataSpec, RunSpec

BINARY_CLASSES: dict[str, tuple[int, int]] = {
    "mnist": (3, 8),  # paper: MNIST 3 vs 8
    "cifar10": (1, 0),  # paper: automobile vs airplane
    "fashion-mnist": (0, 6),  # ours: T-shirt/top vs shirt (the supplement does not say)
    "digits": (3, 8),  # ours, as MNIST
}


REPRODUCE_SEEDS = (0, 1, 2)
"""A reproduction's seeds, --quick included (where ``headless --quick`` trains one): with
one seed the quick digits reproduction decided 4 of claims 1–6 (claims 3 and 4: 30
flipped-or-not points an attack, intervals overlapping; claim 6 without a spread), with
three it decided 5 (``malleability reproduce --dataset digits --quick --seeds 0,1,2``:
8 CPU-minutes on 2 cores, against 3 for one seed; docs/benchmarks.md#results-log)."""


GRID_RIDGES = ("lambda", "objective")
"""Claim 3's sensitivity grid on the binary subsets: the literal λ vs the objective ridge …"""


GRID_RANKINGS = ("abs_mean", "abs_signed_mean")
"""… × mean |I| (the earlier default) vs |mean I| (docs/protocol.md#evidence)."""


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
    protocol: str = "paper"
    """The preprocessing (``engine.kinds.PROTOCOLS``): paper, or centred (``data.center``)."""


def protocol_of(spec: RunSpec) -> str:
    """A spec's protocol: paper (α = 0), centred (α = 1) or ``alpha-<α>`` between, where α is
    the centring fraction (``DataSpec.centring``, docs/protocol.md#kappa-sweep)."""
    a = spec.data.centring
    return "paper" if a == 0 else "centred" if a == 1 else f"alpha-{a:g}"


def protocol_fraction(proto: str) -> float:
    """α of a protocol name (``protocol_of``'s inverse): paper 0, centred 1, ``alpha-<α>``
    with 0 < α < 1. ConfigError naming what is allowed otherwise."""
    if proto in PROTOCOLS:
        return 1.0 if proto == "centred" else 0.0
    head, _, tail = proto.partition("-")
    try:
        a = float(tail) if head == "alpha" else float("nan")
    except ValueError:
        a = float("nan")
    if not 0 < a < 1:  # NaN fails too
        raise ConfigError(
            "protocols", proto, "paper, centred or alpha-<α> with 0 < α < 1 (e.g. alpha-0.5)"
        )
    return a


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
        center_fraction=base.data.center_fraction,
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
    protocols: tuple[str, ...] | None = None,
    scale: str | None = None,
) -> list[Part]:
    """The sub-runs that compute ``tables`` (and κ, the dual implication and the
    landscape, always) for each data set. Each trains each model × width × seed once.
    ``overrides`` (``section__field`` keys) apply after the --quick preset.

    ``protocols`` (None: the preset's own, centred for --quick, else the paper's): every
    part once per protocol, the centred ones keyed ``<part>-centred`` when the paper's
    runs too, so the checklist can show each claim under both.

    ``scale`` (``presets.SCALES``, e.g. ``data``): its settings and each data set's sizes
    (``presets.DATA_SIZES``) before ``overrides``; both protocols unless ``protocols``."""
    if scale is not None:
        if quick:
            raise ConfigError("scale", scale, "a scale or --quick, not both")
        out: list[Part] = []
        for name in datasets:
            over = {**scale_overrides(scale, name), **(overrides or {})}
            out += plan(
                (name,),
                tables=tables,
                seeds=seeds,
                data_dir=data_dir,
                device=device,
                base=base,
                overrides=over,
                protocols=protocols or ("paper", "centred"),
            )
        return out
    base = base or RunSpec()
    if quick:
        base = apply_quick(base)
    base = base.replace(device=device, **(overrides or {}))
    if seeds is not None:  # None: the spec's three seeds, also with --quick
        base = base.replace(seeds=seeds)
    elif quick:
        base = base.replace(seeds=REPRODUCE_SEEDS)
    chosen = tuple(dict.fromkeys(protocols)) if protocols else (protocol_of(base),)
    fractions = {p: protocol_fraction(p) for p in chosen}
    parts = []
    for proto in chosen:
        suffix = f"-{proto}" if proto != "paper" and len(chosen) > 1 else ""
        if proto in PROTOCOLS:
            spec = base.replace(data__center=proto == "centred", data__center_fraction=None)
        else:  # a fraction between: the centring knob (docs/protocol.md#kappa-sweep)
            spec = base.replace(data__center=False, data__center_fraction=fractions[proto])
        parts += [
            Part(
                p.key + suffix,
                p.dataset,
                p.task,
                p.spec,
                role=p.role,
                note=p.note,
                protocol=proto,
            )
            for p in _parts(datasets, tables, data_dir, spec)
        ]
    return parts


def _parts(
    datasets: tuple[str, ...], tables: tuple[int, ...], data_dir: str | None, base: RunSpec
) -> list[Part]:
    """``plan``'s parts for one protocol (``base`` already carries it)."""
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
            center_fraction=base.data.center_fraction,
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
            ):  # the sensitivity grid (docs/claims.md#claim-3)
                bspec = bspec.replace(flip__ridges=GRID_RIDGES, flip__rankings=GRID_RANKINGS)
            parts.append(Part(f"{name}-binary", name, "binary", bspec, note=note))
        if (
            1 in tables
        ):  # claim 1 under full-batch GD beside the paper's Adam (docs/claims.md#claim-1)
            gdata, note = _binary_data(name, data_dir, base)
            gspec = base.replace(experiment="ntk", data=gdata, **GD_SWEEP)
            parts.append(Part(f"{name}-binary-gd", name, "binary", gspec, role="gd", note=note))
    return parts


def _binary_sizes(name: str, n_train: int, n_test: int) -> tuple[int, int, str]:
    """Two classes of a one-split data set (digits: ~180 images a class) cannot give the
    10-class sizes: ``presets.cap_sizes`` for two classes (sizes and its one-line note)."""
    s = cap_sizes(name, 2, n_train, n_test)
    return s.n_train, s.n_test, s.note
