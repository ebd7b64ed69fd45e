"""Typed run specifications: frozen dataclasses, validated, TOML round-trip.

Every default below is documented in the docs/protocol.md#defaults; the
paper's own settings are marked "paper", our choices where it is silent "ours".
"""

from __future__ import annotations

import dataclasses
import math
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import ConfigError
from engine.kinds import (
    ADV_RECIPES,
    ATTACKS,
    EXECUTORS,
    GRADIENT_METHODS,
    INFLUENCE_CONTEXTS,
    INFLUENCE_TRUTHS,
    MODEL_KINDS,
    NORMS,
    OPTIMIZERS,
    PREDICTORS,
    RANKINGS,
    TRAIN_ENGINES,
    UNTIL,
    Predictor,
    check_flip,
)
from engine.ridge import check_ridge_rule
from engine.run.spec.codec import _from_dict, _texts, _to_plain, _utf8, dumps_toml
from engine.run.spec.kappa import KappaSpec

if TYPE_CHECKING:
    from engine.data.sources import SourceOptions

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

DEFAULT_WIDTHS = tuple(2**k for k in range(2, 13))  # 4 … 4096 (paper)


def _check(cond: bool, fld: str, value: Any, allowed: str) -> None:
    if not cond:
        raise ConfigError(fld, value, allowed)


MAX_WIDTH = 2**20
"""Largest hidden width (and QKV d_k) a spec may ask for: beyond it one layer alone
outgrows any machine this tool runs on; every width field is checked against it."""
MAX_EPOCHS = 10**6
"""The most epochs a cell may train (``train.epochs``, ``train.max_epochs``)."""
MAX_SEED = 2**31 - 1
"""Largest seed: seeds are offset and combined (``batch_seed``) and must stay int64."""
MAX_NOTE_CHARS = 500
"""Longest ``note``: one line printed before a run starts, not a document."""
MAX_CONFIG_BYTES = 1 << 20
"""Largest spec file ``RunSpec.load`` reads (a real one is a few KB)."""
MAX_STEP = 1e3
"""Largest attack step size, span or init scale: inputs live in [0, 1], so anything
larger only overflows."""


def _width(v: Any) -> bool:
    return _pos_int(v) and v <= MAX_WIDTH


def _pos_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _pos_float(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _nonneg_float(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


@dataclass(frozen=True)
class DataSpec:
    """Which data set and which subset of it."""

    name: str = "digits"
    """Data set name (see ``malleability data list``)."""
    data_dir: str | None = None
    """Folder holding the files; else $MALLEABILITY_DATA, then the user data dir."""
    classes: tuple[int, ...] | None = None
    """Class labels to keep; two classes → binary task with ±1 targets (MSE). None: all."""
    n_train: int = 1000
    """Training examples, class-balanced (ours; the paper does not say)."""
    n_test: int = 200
    """Test examples, class-balanced (ours)."""
    transductive: bool = False
    """Include the test points in the attention context C (default: training set only)."""
    center: bool = False
    """Subtract the training set's per-pixel mean before the unit-norm scaling, for train, test and attacked inputs (paper: false)."""
    center_fraction: float | None = None
    """Centring as a knob: subtract α × the training set's per-pixel mean (0: the paper's preprocessing, 1: ``center``); unset: ``center`` decides (docs/protocol.md#preprocessing)."""
    image_size: int | None = None
    """folder: / hf: sources: resize every image to this side (square); unset: as found, all alike."""
    mode: str | None = None
    """folder: / hf: sources: Pillow mode L (grey) or RGB; unset: as found, all alike."""
    image_column: str | None = None
    """hf: sources: the image column (unset: image, else img)."""
    label_column: str = "label"
    """hf: sources: the label column."""

    def __post_init__(self) -> None:
        _check(
            isinstance(self.name, str) and bool(self.name),
            "data.name",
            self.name,
            "a data set name",
        )
        from engine.data.sources import is_source, source_problem

        if ":" in self.name and (not is_source(self.name) or source_problem(self.name)):
            _check(
                False, "data.name", self.name, "a data set name, or npz:FILE, folder:DIR, hf:DIR"
            )
        _check(
            self.image_size is None or (_pos_int(self.image_size) and self.image_size <= 4096),
            "data.image_size",
            self.image_size,
            "a positive integer up to 4096 (pixels a side), or unset",
        )
        _check(self.mode in (None, "L", "RGB"), "data.mode", self.mode, "L, RGB, or unset")
        for fld in ("image_column", "label_column"):
            v = getattr(self, fld)
            _check(
                v is None and fld == "image_column" or (isinstance(v, str) and bool(v.strip())),
                f"data.{fld}",
                v,
                "a column name",
            )
        _check(
            _pos_int(self.n_train) and self.n_train >= 2,
            "data.n_train",
            self.n_train,
            "an integer ≥ 2",
        )
        _check(_pos_int(self.n_test), "data.n_test", self.n_test, "a positive integer")
        fr = self.center_fraction
        _check(
            fr is None
            or (isinstance(fr, (int, float)) and not isinstance(fr, bool) and 0 <= fr <= 1),
            "data.center_fraction",
            fr,
            "a number from 0 (the paper's preprocessing) to 1 (centred), or unset",
        )
        _check(
            not (self.center and fr is not None and fr != 1),
            "data.center_fraction",
            fr,
            "1 or unset while data.center is true (--center means a fraction of 1)",
        )
        if self.classes is not None:
            cl = tuple(self.classes)
            _check(
                len(cl) >= 2
                and all(isinstance(c, int) and c >= 0 for c in cl)
                and len(set(cl)) == len(cl),
                "data.classes",
                self.classes,
                "two or more distinct non-negative class labels, e.g. 3,8",
            )
            object.__setattr__(self, "classes", cl)

    @property
    def centring(self) -> float:
        """α, the share of the training set's per-pixel mean subtracted before the unit-norm
        scaling: ``center_fraction`` when set, else 1.0 with ``center`` and 0.0 without."""
        if self.center_fraction is not None:
            return float(self.center_fraction)
        return 1.0 if self.center else 0.0

    def check_source_fields(self, names: tuple[str, ...]) -> None:
        """ConfigError when a source field is set but no data set in ``names`` (data.name
        and spectrum.datasets) reads it: a built-in's images and an npz:'s arrays are used
        as stored, so ``image_size`` / ``mode`` would be recorded in spec.toml yet ignored
        (the spec must say what ran); the columns are read by hf: sources only."""
        from engine.data.sources import is_source, parse_source, source_problem

        kinds = {parse_source(n).kind for n in names if is_source(n) and not source_problem(n)}
        for fld, unset, readers in (
            ("image_size", None, ("folder", "hf")),
            ("mode", None, ("folder", "hf")),
            ("image_column", None, ("hf",)),
            ("label_column", "label", ("hf",)),
        ):
            value = getattr(self, fld)
            if value != unset and not kinds & set(readers):
                _check(
                    False,
                    f"data.{fld}",
                    value,
                    f"set only for {' and '.join(k + ':' for k in readers)} sources "
                    f"({', '.join(names)} {'is' if len(names) == 1 else 'are'} used as stored)",
                )

    def source_options(self) -> SourceOptions:
        """The options a data source (npz:/folder:/hf:) is read with."""
        from engine.data.sources import SourceOptions

        return SourceOptions(self.image_size, self.mode, self.image_column, self.label_column)


@dataclass(frozen=True)
class ModelSpec:
    """The two models and their widths."""

    kinds: tuple[str, ...] = ("relu", "attn")
    """Models to compare: relu (2L-ReLU), attn (MLP-Attn), qkv (QKV-Attn, the v2 extension)."""
    widths: tuple[int, ...] = DEFAULT_WIDTHS
    """Hidden widths m (paper: 4 … 4096, powers of two)."""
    sigma_w: float = 0.01
    """First-layer init std σ_w (paper: 0.01)."""
    train_output: bool = False
    """Also train the ±1 output layer (paper: fixed)."""

    def __post_init__(self) -> None:
        kinds = tuple(self.kinds)
        _check(
            len(kinds) >= 1
            and all(k in MODEL_KINDS for k in kinds)
            and len(set(kinds)) == len(kinds),
            "model.kinds",
            self.kinds,
            "a non-empty subset of relu, attn, qkv",
        )
        widths = tuple(self.widths)
        _check(
            len(widths) >= 1 and all(_width(w) for w in widths) and len(set(widths)) == len(widths),
            "model.widths",
            self.widths,
            "distinct positive integers up to 1048576, e.g. 16,1024,4096",
        )
        _check(
            _pos_float(self.sigma_w),
            "model.sigma_w",
            self.sigma_w,
            "a positive number (paper: 0.01)",
        )
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "widths", tuple(sorted(set(widths))))


@dataclass(frozen=True)
class TrainSpec:
    """Optimisation (docs/protocol.md#training)."""

    optimizer: str = "adam"
    """adam (paper), sgd (mini-batch) or gd (full batch)."""
    lr: float = 1e-3
    """Learning rate (paper: 1e-3)."""
    epochs: int = 500
    """Epochs (paper: 500)."""
    batch_size: int = 128
    """Mini-batch size (paper: 128); ignored by gd."""
    l2: float = 1e-3
    """L2 penalty λ, added to the loss as (λ/2)‖θ‖² (paper: λ = 1e-3)."""
    until: str = "fixed"
    """fixed: exactly ``epochs``; converged: from ``epochs`` on, every ``check_every`` epochs read the convergence guard on the last 10 % and on the last 20 % of the epochs, and stop when both hold or at ``max_epochs`` (ours; ``engine.train.until``)."""
    max_epochs: int = 2000
    """The cap on epochs when until = converged (never below ``epochs``); the guard judges a capped cell as any other."""
    check_every: int = 10
    """Epochs between two checks of the stopping rule when until = converged (the guard on 10 % and on 20 % windows: ``engine.train.until.may_stop``)."""
    batch_networks: int = 64
    """Most same-shaped networks trained side by side in one batched call (influence_check's retrainings; in this process also the seeds of a model and width, their linearized twins, trainability's κ points: each keeps its own data, batches, optimiser state and stop; a chunk also stays under 1 GiB); 1: each network separately (the earlier path)."""

    engine: str = "fused"
    """fused: 2L-ReLU, MLP-Attn and their linearized twins train with the closed-form step (no autograd; several networks stacked in one step), QKV-Attn with autograd; autograd: every model through autograd, the reference (``engine.train.fused``; speeds in docs/benchmarks-training.md)."""

    def __post_init__(self) -> None:
        _check(
            self.engine in TRAIN_ENGINES,
            "train.engine",
            self.engine,
            f"one of {', '.join(TRAIN_ENGINES)}",
        )
        _check(
            _pos_int(self.batch_networks),
            "train.batch_networks",
            self.batch_networks,
            "a positive integer (1: one network at a time)",
        )
        _check(
            self.optimizer in OPTIMIZERS,
            "train.optimizer",
            self.optimizer,
            f"one of {', '.join(OPTIMIZERS)}",
        )
        _check(_pos_float(self.lr), "train.lr", self.lr, "a positive number (paper: 1e-3)")
        _check(
            _pos_int(self.epochs) and self.epochs <= MAX_EPOCHS,
            "train.epochs",
            self.epochs,
            f"a positive integer up to {MAX_EPOCHS} (paper: 500)",
        )
        _check(
            _pos_int(self.batch_size),
            "train.batch_size",
            self.batch_size,
            "a positive integer (paper: 128)",
        )
        _check(_nonneg_float(self.l2), "train.l2", self.l2, "a number ≥ 0 (paper: 1e-3)")
        _check(self.until in UNTIL, "train.until", self.until, "fixed or converged")
        _check(
            _pos_int(self.max_epochs) and self.max_epochs <= MAX_EPOCHS,
            "train.max_epochs",
            self.max_epochs,
            f"a positive integer up to {MAX_EPOCHS}",
        )
        _check(
            _pos_int(self.check_every), "train.check_every", self.check_every, "a positive integer"
        )


@dataclass(frozen=True)
class NTKSpec:
    """NTK predictor and distances (docs/protocol.md#ntk)."""

    lam: float = 1e-3
    """Ridge of f_NTK when ridge = "lambda" (the earlier default)."""
    ridge: str | float = "objective"
    """Ridge of f_NTK: objective (nλ/2 from the training L2 λ, docs/protocol.md#evidence), lambda (ntk.lam) or a number."""
    predictor: Predictor = "ridge"
    """ridge (kernel ridge regression) or flow (gradient flow to time flow_time, MSE)."""
    flow_time: float = 1000.0
    """Gradient-flow time t for predictor=flow."""
    compare: str = "logits"
    """Multiclass: compare f_NTK (one-hot ridge) with the network's logits or its softmax probabilities."""
    drift_every: int = 10
    """Record the kernel drift ‖Θ_t − Θ_0‖_F/‖Θ_0‖_F every this many epochs (0: off)."""
    drift_points: int = 256
    """Training points used for the drift kernel (a fixed seeded probe subset)."""

    def __post_init__(self) -> None:
        _check(_pos_float(self.lam), "ntk.lam", self.lam, "a positive number")
        object.__setattr__(self, "ridge", check_ridge_rule(self.ridge, "ntk.ridge"))
        _check(self.predictor in PREDICTORS, "ntk.predictor", self.predictor, "ridge or flow")
        _check(
            self.compare in ("logits", "probabilities"),
            "ntk.compare",
            self.compare,
            "logits or probabilities",
        )
        _check(_pos_float(self.flow_time), "ntk.flow_time", self.flow_time, "a positive number")
        _check(
            isinstance(self.drift_every, int) and self.drift_every >= 0,
            "ntk.drift_every",
            self.drift_every,
            "an integer ≥ 0",
        )
        _check(
            _pos_int(self.drift_points), "ntk.drift_points", self.drift_points, "a positive integer"
        )


@dataclass(frozen=True)
class SpectrumSpec:
    """Gram spectra and condition numbers (docs/protocol.md#spectra)."""

    rtol: float | None = None
    """Eigenvalue tolerance relative to λ_max for the numerical rank (None: (max(n, d)·eps)², i.e. σ > max(n, d)·eps·σ_max)."""
    datasets: tuple[str, ...] = ()
    """Extra data sets to compare in the same run (e.g. mnist,cifar10)."""

    def __post_init__(self) -> None:
        if self.rtol is not None:
            _check(
                _pos_float(self.rtol) and self.rtol < 1,
                "spectrum.rtol",
                self.rtol,
                "a number in (0, 1), e.g. 1e-10",
            )
        datasets = tuple(self.datasets)
        _check(
            all(isinstance(n, str) and n for n in datasets) and len(set(datasets)) == len(datasets),
            "spectrum.datasets",
            self.datasets,
            "distinct data set names, e.g. mnist,cifar10",
        )
        object.__setattr__(self, "datasets", datasets)


@dataclass(frozen=True)
class FlipSpec:
    """Influence flip-rate protocol (docs/protocol.md#influence)."""

    attacks: tuple[str, ...] = ATTACKS
    """Attacks: fgsm, pgd, mim."""
    eps: tuple[float, ...] = (0.3,)
    """ℓ∞ radii in pixel space (paper: 0.3; sweep 0.1,0.2,0.3,0.5)."""
    norm: str = "linf"
    """Threat model: linf (paper) or l2."""
    width: int = 1024
    """Width of the networks whose influence is measured (ours)."""
    top_frac: float = 0.1
    """Fraction of training points selected as most influential (paper: 10%)."""
    ranking: str = "abs_signed_mean"
    """abs_signed_mean: rank by |s_i|, s_i = mean_t I[t, i], flip = sign change of s_i (ours, docs/protocol.md#evidence); abs_mean: mean_t |I|; signed_mean: s_i, most helpful first; per_test: top set per test point, flips per (t, i) pair."""
    intervention: str = "transformed"
    """transformed (replace the top set by adversarial versions; paper's tables), curated, adversarial."""
    ridge: str | float = "objective"
    """Ridge of the kernel leave-one-out influence: objective (nλ/2, the minimiser of the linearized training objective; ours), lambda (the bare train.l2) or a number."""
    ridges: tuple[str | float, ...] = ()
    """Sensitivity grid: ridges evaluated on the same trained models (empty: just ``ridge``)."""
    rankings: tuple[str, ...] = ()
    """Sensitivity grid: rankings evaluated on the same trained models (empty: just ``ranking``)."""
    pgd_steps: int = 40
    """PGD steps (ours)."""
    pgd_alpha: float | None = None
    """PGD step size in pixel units; unset: 2.5·ε/pgd_steps (Madry et al. 2018; 0.01875 at ε 0.3, 40 steps)."""
    random_start: bool = True
    """PGD starts from a uniform point in the ε-ball (ours)."""
    restarts: int = 1
    """PGD restarts (best loss kept)."""
    mim_steps: int = 10
    """MIM steps (ours); step size ε/mim_steps."""
    mim_decay: float = 1.0
    """MIM momentum decay μ (ours)."""
    retrain: bool = False
    """Retrain on the intervened set instead of freezing the weights (paper: frozen)."""
    adv_eps: float = 0.3
    """ε of adversarial training (advtrain experiment)."""
    adv_recipe: str = "pgd"
    """Adversarial training: pgd (Madry et al. 2018; the paper: "the same attack") or fgsm_rs (FGSM from a random start, Wong et al. 2020: one gradient per step, ≈ 1/(1 + pgd_steps) of PGD training's attack cost)."""
    adv_steps: int | None = None
    """PGD steps of adversarial training; unset: pgd_steps (the attack's). fgsm_rs takes 1."""
    adv_alpha: float | None = None
    """Step of adversarial training in pixel units; unset: 2.5·ε/adv_steps (pgd) or 1.25·ε (fgsm_rs, Wong et al. 2020)."""

    def __post_init__(self) -> None:
        attacks = tuple(self.attacks)
        _check(
            len(attacks) >= 1
            and all(a in ATTACKS for a in attacks)
            and len(set(attacks)) == len(attacks),
            "flip.attacks",
            self.attacks,
            "a subset of fgsm, pgd, mim (each once)",
        )
        _check(
            all(_nonneg_float(e) for e in self.eps),
            "flip.eps",
            self.eps,
            "numbers in (0, 1] (pixel space), e.g. 0.1,0.3",
        )
        eps = tuple(float(e) for e in self.eps)
        _check(
            len(eps) >= 1
            and all(_pos_float(e) and e <= 1 for e in eps)
            and len(set(eps)) == len(eps),
            "flip.eps",
            self.eps,
            "distinct numbers in (0, 1] (pixel space), e.g. 0.1,0.3",
        )
        _check(self.norm in NORMS, "flip.norm", self.norm, "linf or l2")
        _check(
            _width(self.width), "flip.width", self.width, f"a positive integer up to {MAX_WIDTH}"
        )
        check_flip(top_frac=self.top_frac, intervention=self.intervention, retrain=self.retrain)
        _check(
            self.ranking in RANKINGS, "flip.ranking", self.ranking, f"one of {', '.join(RANKINGS)}"
        )
        object.__setattr__(self, "ridge", check_ridge_rule(self.ridge, "flip.ridge"))
        ridges = tuple(check_ridge_rule(r, "flip.ridges") for r in self.ridges)
        object.__setattr__(self, "ridges", tuple(dict.fromkeys(ridges)))
        rankings = tuple(self.rankings)
        _check(
            all(r in RANKINGS for r in rankings),
            "flip.rankings",
            self.rankings,
            f"a list of {', '.join(RANKINGS)}",
        )
        object.__setattr__(self, "rankings", tuple(dict.fromkeys(rankings)))
        _check(_pos_int(self.pgd_steps), "flip.pgd_steps", self.pgd_steps, "a positive integer")
        _check(
            self.pgd_alpha is None or (_pos_float(self.pgd_alpha) and self.pgd_alpha <= MAX_STEP),
            "flip.pgd_alpha",
            self.pgd_alpha,
            f"a positive number up to {MAX_STEP:g}, or leave it out for 2.5·ε/pgd_steps",
        )
        _check(_pos_int(self.restarts), "flip.restarts", self.restarts, "a positive integer")
        _check(_pos_int(self.mim_steps), "flip.mim_steps", self.mim_steps, "a positive integer")
        _check(_nonneg_float(self.mim_decay), "flip.mim_decay", self.mim_decay, "a number ≥ 0")
        _check(
            _pos_float(self.adv_eps) and self.adv_eps <= 1,
            "flip.adv_eps",
            self.adv_eps,
            "a number in (0, 1]",
        )
        _check(
            self.adv_recipe in ADV_RECIPES,
            "flip.adv_recipe",
            self.adv_recipe,
            " or ".join(ADV_RECIPES),
        )
        _check(
            self.adv_steps is None
            or (_pos_int(self.adv_steps) and (self.adv_recipe == "pgd" or self.adv_steps == 1)),
            "flip.adv_steps",
            self.adv_steps,
            "a positive integer (fgsm_rs: 1), or leave it out for pgd_steps",
        )
        _check(
            self.adv_alpha is None or (_pos_float(self.adv_alpha) and self.adv_alpha <= MAX_STEP),
            "flip.adv_alpha",
            self.adv_alpha,
            f"a positive number up to {MAX_STEP:g}, or leave it out for the recipe's default",
        )
        object.__setattr__(self, "attacks", attacks)
        object.__setattr__(self, "eps", eps)

    def adv_training_steps(self) -> int:
        """Attack steps per mini-batch of adversarial training: 1 for fgsm_rs, else
        ``adv_steps`` or the attack's ``pgd_steps``."""
        if self.adv_recipe == "fgsm_rs":
            return 1
        return self.adv_steps if self.adv_steps is not None else self.pgd_steps

    def protocols(self) -> tuple[tuple[str | float, str], ...]:
        """The (ridge, ranking) combinations to evaluate: the default protocol
        (``ridge``, ``ranking``) first, then the grid ``ridges`` × ``rankings`` (an empty
        list stands for the default alone)."""
        grid = [
            (r, k)
            for r in (self.ridges or (self.ridge,))
            for k in (self.rankings or (self.ranking,))
        ]
        return tuple(dict.fromkeys([(self.ridge, self.ranking), *grid]))


@dataclass(frozen=True)
class InfluenceCheckSpec:
    """Ground truth by retraining (``influence_check``, docs/protocol.md#evidence): every influence
    estimator against the true effect of removing a training point."""

    n_train: int = 200
    """Training points of the check's subset (ours; each removed point costs a retraining)."""
    n_test: int = 100
    """Test points whose loss changes are measured (ours)."""
    width: int = 256
    """Width of the networks retrained (ours)."""
    top: int = 20
    """Points removed: the ``top`` best-ranked by the default flip protocol (flip.ridge, flip.ranking) …"""
    random: int = 20
    """… and ``random`` more drawn uniformly from the rest (seeded with the run seed)."""
    ridges: tuple[str | float, ...] = ("lambda", "objective", "nlambda")
    """Ridges of the kernel LOO estimator (engine.ridge rules or numbers)."""
    gradient: tuple[str, ...] = ("exact",)
    """Gradient-influence methods (exact, cg). exact: for the 2L-ReLU and MLP-Attn heads
    (Hessian = Gauss–Newton + λI) on the [n, n] kernel at any width, else the dense
    Hessian up to ``exact_max_params``; cg (not a default: the same numbers to its 1e-8
    tolerance at 6.6× the CPU, docs/benchmarks.md#influence-check-cost)."""
    exact_max_params: int = 4096
    """Largest parameter count for which the dense Hessian (exact) is formed (the heads'
    Gauss–Newton solve has no cap: its size is the kernel's)."""
    context: str = "refit"
    """MLP-Attn's C when a point is removed: refit (C = XᵀX of the remaining points, what retraining on the smaller set means) or fixed (C of the full set, what the estimators hold fixed)."""
    truth: str = "pbrf"
    """Ground truth: pbrf (the proximal Bregman response, warm-started at the trained weights, C fixed; Bae et al. 2022), retrain (retraining from scratch without the point) or both."""
    pbrf_steps: int = 25
    """Most L-BFGS iterations of the PBRF truth (its noise floor runs twice as many)."""
    pbrf_tol: float = 1e-6
    """The PBRF's stopping rule: each point's gradient norm at most this times its starting one."""
    noise_floor: bool = True
    """Also measure each truth's resolution: retraining with another batch order; the PBRF solved again with twice the steps (how well each agrees with its truth)."""

    def __post_init__(self) -> None:
        _check(
            _pos_int(self.n_train) and self.n_train >= 4,
            "influence_check.n_train",
            self.n_train,
            "an integer ≥ 4",
        )
        _check(_pos_int(self.n_test), "influence_check.n_test", self.n_test, "a positive integer")
        _check(
            _width(self.width),
            "influence_check.width",
            self.width,
            f"a positive integer up to {MAX_WIDTH}",
        )
        _check(
            isinstance(self.top, int) and not isinstance(self.top, bool) and self.top >= 0,
            "influence_check.top",
            self.top,
            "an integer ≥ 0",
        )
        _check(
            isinstance(self.random, int) and not isinstance(self.random, bool) and self.random >= 0,
            "influence_check.random",
            self.random,
            "an integer ≥ 0",
        )
        _check(
            self.top + self.random >= 3,
            "influence_check.top",
            self.top,
            "top + random ≥ 3 points (a rank correlation needs three)",
        )
        ridges = tuple(check_ridge_rule(r, "influence_check.ridges") for r in self.ridges)
        object.__setattr__(self, "ridges", tuple(dict.fromkeys(ridges)))
        grad = tuple(self.gradient)
        _check(
            all(g in GRADIENT_METHODS for g in grad),
            "influence_check.gradient",
            self.gradient,
            "a list of cg, exact (or empty)",
        )
        object.__setattr__(self, "gradient", tuple(dict.fromkeys(grad)))
        _check(
            _pos_int(self.exact_max_params),
            "influence_check.exact_max_params",
            self.exact_max_params,
            "a positive integer",
        )
        _check(
            self.truth in INFLUENCE_TRUTHS,
            "influence_check.truth",
            self.truth,
            "pbrf, retrain or both",
        )
        _check(
            _pos_int(self.pbrf_steps),
            "influence_check.pbrf_steps",
            self.pbrf_steps,
            "a positive integer",
        )
        _check(
            _pos_float(self.pbrf_tol),
            "influence_check.pbrf_tol",
            self.pbrf_tol,
            "a positive number",
        )
        _check(
            self.context in INFLUENCE_CONTEXTS,
            "influence_check.context",
            self.context,
            "refit or fixed",
        )


@dataclass(frozen=True)
class LandscapeSpec:
    """Loss landscape and sharpness (docs/protocol.md#landscape)."""

    width: int = 1024
    """Width of the networks whose landscape is measured (ours)."""
    points_1d: int = 41
    """Points of the 1-D curves."""
    points_2d: int = 21
    """Points per axis of the 2-D surface."""
    span: float = 1.0
    """α, β range [−span, span] in filter-normalised units."""
    split: str = "train"
    """Loss evaluated on train, test or both."""
    hessian_iters: int = 100
    """Iteration cap of power iteration / Lanczos."""
    hessian_tol: float = 1e-4
    """Relative convergence tolerance of the top eigenvalue."""
    hutchinson_samples: int = 100
    """Rademacher probes of Hutchinson's trace estimate."""

    def __post_init__(self) -> None:
        _check(
            _width(self.width),
            "landscape.width",
            self.width,
            f"a positive integer up to {MAX_WIDTH}",
        )
        _check(
            _pos_int(self.points_1d) and self.points_1d >= 3,
            "landscape.points_1d",
            self.points_1d,
            "an integer ≥ 3",
        )
        _check(
            _pos_int(self.points_2d) and self.points_2d >= 3,
            "landscape.points_2d",
            self.points_2d,
            "an integer ≥ 3",
        )
        _check(
            _pos_float(self.span) and self.span <= MAX_STEP,
            "landscape.span",
            self.span,
            f"a positive number up to {MAX_STEP:g}",
        )
        _check(
            self.split in ("train", "test", "both"),
            "landscape.split",
            self.split,
            "train, test or both",
        )
        _check(
            _pos_int(self.hessian_iters),
            "landscape.hessian_iters",
            self.hessian_iters,
            "a positive integer",
        )
        _check(
            _pos_float(self.hessian_tol),
            "landscape.hessian_tol",
            self.hessian_tol,
            "a positive number",
        )
        _check(
            _pos_int(self.hutchinson_samples),
            "landscape.hutchinson_samples",
            self.hutchinson_samples,
            "a positive integer",
        )


@dataclass(frozen=True)
class ExecutorSpec:
    """Where sweep cells run (docs/guide.md#ray); never changes the numbers."""

    kind: str = "local"
    """local (in this process, one cell after another) or ray (parallel cells)."""
    address: str | None = None
    """Ray cluster address (host:port or ray://…); None: start a local Ray on this machine."""
    max_parallel: int = 0
    """Cells in flight at once (0: as many as the cluster's CPUs allow)."""
    cpus_per_cell: int = 1
    """CPUs (and torch threads) per cell."""
    gpus_per_cell: float = 0.0
    """GPUs per cell (fractions share a GPU); 0: CPU cells."""
    max_retries: int = 1
    """Retries of a cell whose worker died or which raised (then it is recorded as failed)."""

    def __post_init__(self) -> None:
        _check(self.kind in EXECUTORS, "executor.kind", self.kind, "local or ray")
        _check(
            self.address is None or (isinstance(self.address, str) and bool(self.address.strip())),
            "executor.address",
            self.address,
            "host:port of a Ray head node, ray://host:port or auto",
        )
        _check(
            isinstance(self.max_parallel, int)
            and not isinstance(self.max_parallel, bool)
            and self.max_parallel >= 0,
            "executor.max_parallel",
            self.max_parallel,
            "an integer ≥ 0 (0: no limit)",
        )
        _check(
            _pos_int(self.cpus_per_cell),
            "executor.cpus_per_cell",
            self.cpus_per_cell,
            "a positive integer",
        )
        _check(
            _nonneg_float(self.gpus_per_cell),
            "executor.gpus_per_cell",
            self.gpus_per_cell,
            "a number ≥ 0",
        )
        _check(
            isinstance(self.max_retries, int)
            and not isinstance(self.max_retries, bool)
            and 0 <= self.max_retries <= 100,
            "executor.max_retries",
            self.max_retries,
            "an integer in 0…100",
        )
        object.__setattr__(self, "gpus_per_cell", float(self.gpus_per_cell))


@dataclass(frozen=True)
class QKVSpec:
    """QKV-Attn, trainable Q/K/V linearized attention (v2 extension, docs/protocol.md#models)."""

    d_k: int = 0
    """Width d_k of W_Q, W_K, W_V ∈ R^{d×d_k} (0: d_k = d, the v2 setting)."""
    init_std: float = 0.0
    """Std of the projections' init (0: standard, 1/√d)."""
    dk_sweep: tuple[int, ...] = ()
    """ntk: extra d_k values swept at the largest width (empty: none)."""

    def __post_init__(self) -> None:
        _check(
            isinstance(self.d_k, int)
            and not isinstance(self.d_k, bool)
            and 0 <= self.d_k <= MAX_WIDTH,
            "qkv.d_k",
            self.d_k,
            f"an integer from 0 to {MAX_WIDTH} (0: d_k = d)",
        )
        _check(
            _nonneg_float(self.init_std) and self.init_std <= MAX_STEP,
            "qkv.init_std",
            self.init_std,
            f"a number from 0 to {MAX_STEP:g} (0: 1/√d)",
        )
        sweep = tuple(self.dk_sweep)
        _check(
            all(_pos_int(k) for k in sweep),
            "qkv.dk_sweep",
            self.dk_sweep,
            "positive integers, e.g. 8,32,128",
        )
        object.__setattr__(self, "dk_sweep", tuple(sorted(set(sweep))))


TRAINABILITY_KAPPAS = tuple(float(f"{10 ** (1 + k / 2):.4g}") for k in range(11))  # 10 … 1e6


@dataclass(frozen=True)
class TrainabilitySpec:
    """Trainability vs κ (experiment ``trainability``): optimiser steps to a target loss on
    synthetic data with a prescribed Gram spectrum, and on the run's data set (ours)."""

    kappas: tuple[float, ...] = TRAINABILITY_KAPPAS
    """Prescribed κ(G) of the synthetic sweep (default 10 … 1e6, two points a decade)."""
    n: int = 64
    """Synthetic training points (= the rank of G; n ≤ d keeps G full rank)."""
    d: int = 64
    """Synthetic input dimension."""
    width: int = 256
    """Width of the networks trained."""
    target: float = 0.01
    """A cell has converged when its epoch-mean training loss ≤ target × the constant predictor's loss."""
    max_steps: int = 20000
    """The cap on optimiser steps; a cell that reaches it is censored."""
    l2: float = 0.0
    """L2 penalty of these runs (0: a ridge would bound which directions can be fit at all, another effect)."""

    def __post_init__(self) -> None:
        ks = tuple(float(k) for k in self.kappas)
        _check(
            len(ks) >= 2 and all(math.isfinite(k) and 1 <= k <= 1e12 for k in ks),
            "trainability.kappas",
            self.kappas,
            "two or more numbers in [1, 1e12], e.g. 10,100,1000",
        )
        object.__setattr__(self, "kappas", tuple(sorted(set(ks))))
        _check(_pos_int(self.n) and self.n >= 2, "trainability.n", self.n, "an integer ≥ 2")
        _check(_pos_int(self.d), "trainability.d", self.d, "a positive integer")
        _check(_pos_int(self.width), "trainability.width", self.width, "a positive integer")
        _check(
            _pos_float(self.target) and self.target < 1,
            "trainability.target",
            self.target,
            "a number in (0, 1)",
        )
        _check(
            _pos_int(self.max_steps) and self.max_steps <= 10**7,
            "trainability.max_steps",
            self.max_steps,
            "a positive integer up to 10000000",
        )
        _check(_nonneg_float(self.l2), "trainability.l2", self.l2, "a number ≥ 0")


@dataclass(frozen=True)
class RunSpec:
    """One run: which experiments on which data, with which models and options."""

    experiment: str = "all"
    """An experiment name (see ``malleability headless --help``) or all."""
    data: DataSpec = field(default_factory=DataSpec)
    model: ModelSpec = field(default_factory=ModelSpec)
    train: TrainSpec = field(default_factory=TrainSpec)
    ntk: NTKSpec = field(default_factory=NTKSpec)
    spectrum: SpectrumSpec = field(default_factory=SpectrumSpec)
    flip: FlipSpec = field(default_factory=FlipSpec)
    influence_check: InfluenceCheckSpec = field(default_factory=InfluenceCheckSpec)
    landscape: LandscapeSpec = field(default_factory=LandscapeSpec)
    trainability: TrainabilitySpec = field(default_factory=TrainabilitySpec)
    kappa: KappaSpec = field(default_factory=KappaSpec)
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)
    qkv: QKVSpec = field(default_factory=QKVSpec)
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds (ours: 3); each seeds the subset draw, the init and the batch order."""
    device: str = "auto"
    """auto (CUDA when present), cpu or cuda."""
    dtype: str = "float32"
    """float32 or float64 for training and kernels."""
    quick: bool = False
    """Whether the --quick preset was applied (recorded for the report)."""
    note: str = ""
    """One line a run prints before it starts: what its config knows some cells cannot do, and why ('' for none)."""

    def __post_init__(self) -> None:
        _check(
            isinstance(self.experiment, str) and bool(self.experiment),
            "experiment",
            self.experiment,
            "an experiment name or all",
        )
        names = [n.strip() for n in self.experiment.split(",")]
        twice = sorted({n for n in names if names.count(n) > 1})
        _check(
            not twice,
            "experiment",
            self.experiment,
            f"each experiment once ({', '.join(twice)} is repeated)",
        )
        _check(
            isinstance(self.note, str)
            and len(self.note) <= MAX_NOTE_CHARS
            and not any(unicodedata.category(c) == "Cc" for c in self.note),
            "note",
            self.note,
            f"one line of text, up to {MAX_NOTE_CHARS} characters, without control characters "
            "(ESC, BEL, NUL, CR, a newline: they would reach the terminal raw)",
        )
        seeds = tuple(self.seeds)
        _check(
            len(seeds) >= 1
            and all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED for s in seeds
            )
            and len(set(seeds)) == len(seeds),
            "seeds",
            self.seeds,
            f"distinct integers from 0 to {MAX_SEED}, e.g. 0,1,2",
        )
        object.__setattr__(self, "seeds", seeds)
        _check(
            isinstance(self.device, str)
            and (self.device in ("auto", "cpu") or self.device.startswith("cuda")),
            "device",
            self.device,
            "auto, cpu or cuda",
        )
        _check(self.dtype in ("float32", "float64"), "dtype", self.dtype, "float32 or float64")
        _check(
            not (self.data.centring > 0 and "qkv" in self.model.kinds),
            "data.center_fraction" if self.data.center_fraction else "data.center",
            self.data.center_fraction or True,
            "false while QKV-Attn is among the models (centring is supported for relu and attn)",
        )
        self.data.check_source_fields((self.data.name, *self.spectrum.datasets))
        for name, text in _texts(self.to_dict()):
            _check(
                _utf8(text),
                name,
                text,
                "text in UTF-8 (this holds bytes that are not: a name in another encoding?); "
                "spec.toml could not hold it",
            )

    # -- serialisation ---------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (tuples become lists, None values are dropped)."""
        return _to_plain(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSpec:
        """Inverse of ``to_dict``; unknown keys raise ``ConfigError``."""
        return _from_dict(cls, d, "", SECTIONS)

    def to_toml(self) -> str:
        return dumps_toml(self.to_dict())

    @classmethod
    def from_toml(cls, text: str) -> RunSpec:
        text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark is not a statement
        try:
            d = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError("config", "TOML", f"valid TOML ({e})") from None
        except RecursionError:
            raise ConfigError(
                "config", "TOML", "TOML nested a few levels deep, not hundreds"
            ) from None
        return cls.from_dict(d)

    @classmethod
    def load(cls, path: str | Path) -> RunSpec:
        """Read a spec file; every error names the file (one line)."""
        from engine.files import FileRefused, read_small_text

        p = Path(path)
        try:
            text = read_small_text(p, MAX_CONFIG_BYTES)
        except FileRefused as e:
            raise ConfigError(
                "config",
                str(p),
                f"a regular TOML file of at most {MAX_CONFIG_BYTES >> 20} MiB (this is {e})",
            ) from None
        except UnicodeDecodeError:
            raise ConfigError("config", str(p), "a UTF-8 TOML file (this one is binary)") from None
        except OSError as e:
            raise ConfigError("config", str(p), f"a readable TOML file ({e.strerror})") from None
        try:
            return cls.from_toml(text)
        except ConfigError as e:
            raise ConfigError(e.field, e.value, e.allowed, where=str(p)) from None

    def save(self, path: str | Path) -> None:
        """Write the spec as TOML (atomically: a temp file beside it, then a rename)."""
        from engine.run.paths import atomic_write

        atomic_write(Path(path), self.to_toml())

    def replace(self, **changes: Any) -> RunSpec:
        """Copy with top-level fields or ``section__field`` keys replaced."""
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        for k, v in changes.items():
            if "__" in k:
                sec, f = k.split("__", 1)
                nested.setdefault(sec, {})[f] = v
            else:
                top[k] = v
        for sec, vals in nested.items():
            top[sec] = dataclasses.replace(top.get(sec, getattr(self, sec)), **vals)
        return dataclasses.replace(self, **top)


SECTIONS = {
    "data": DataSpec,
    "model": ModelSpec,
    "train": TrainSpec,
    "ntk": NTKSpec,
    "spectrum": SpectrumSpec,
    "flip": FlipSpec,
    "influence_check": InfluenceCheckSpec,
    "landscape": LandscapeSpec,
    "trainability": TrainabilitySpec,
    "kappa": KappaSpec,
    "executor": ExecutorSpec,
    "qkv": QKVSpec,
}
