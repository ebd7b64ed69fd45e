"""The names of the engine's strategies as ``Literal`` types, each defined once.

Pure typing (no torch), so the spec (``engine.run.spec``, which reads its field
types off these annotations) and the numeric packages share one definition; each tuple
is its type's values in order, for validators and help texts. ``check_flip`` is the one
check of the flip section's names and limits that both read.
"""

from __future__ import annotations

from typing import Literal, get_args

from engine.errors import ConfigError

Predictor = Literal["ridge", "flow"]
"""The NTK predictor: kernel ridge regression, or gradient flow to a finite time."""
PREDICTORS: tuple[Predictor, ...] = get_args(Predictor)

NtkMethod = Literal["auto", "structured", "jacobian"]
"""How the empirical NTK is computed (``engine.ntk.empirical``)."""
NTK_METHODS: tuple[NtkMethod, ...] = get_args(NtkMethod)

Attack = Literal["fgsm", "pgd", "mim"]
"""The adversarial attacks (``engine.attacks``), in the tables' order."""
ATTACKS: tuple[Attack, ...] = get_args(Attack)

Optimizer = Literal["adam", "sgd", "gd"]
"""The training optimisers (``engine.train``); gd is full batch."""
OPTIMIZERS: tuple[Optimizer, ...] = get_args(Optimizer)

TrainEngine = Literal["fused", "autograd"]
"""How a training step is computed (``engine.train.fused``): the closed-form step where the
model has one (2L-ReLU, MLP-Attn, their twins), else autograd; or autograd everywhere."""
TRAIN_ENGINES: tuple[TrainEngine, ...] = get_args(TrainEngine)

FUSED_KINDS = ("relu", "attn")
"""The model kinds with the fused step (``engine.train.fused.plan`` accepts them; QKV-Attn
trains its attention): one two-layer head on fixed features, so the run's trainer
stacks both kinds of one width in one step (``engine.run.training``)."""

Ranking = Literal["abs_signed_mean", "abs_mean", "signed_mean", "per_test"]
"""How the top 10 % most influential training points are ranked (``engine.malleability.ranking``)."""
RANKINGS: tuple[Ranking, ...] = get_args(Ranking)

Intervention = Literal["transformed", "curated", "adversarial"]
"""What is done to the selected training points (``engine.malleability.protocol``)."""
INTERVENTIONS: tuple[Intervention, ...] = get_args(Intervention)

CiMethod = Literal["wilson", "clopper_pearson"]
"""The binomial confidence intervals of the flip rates (``engine.results.stats``)."""
CI_METHODS: tuple[CiMethod, ...] = get_args(CiMethod)

Norm = Literal["linf", "l2"]
"""The attacks' threat-model norm."""
NORMS: tuple[Norm, ...] = get_args(Norm)

Until = Literal["fixed", "converged"]
"""How long a cell trains: ``train.epochs``, or until it settles (``engine.train.until``; cap
``train.max_epochs``)."""
UNTIL: tuple[Until, ...] = get_args(Until)

Protocol = Literal["paper", "centred"]
"""A reproduction's preprocessing: the paper's (pixels in [0, 1], unit rows) or with
per-pixel centring first (``data.center``; not in the paper, docs/protocol.md#evidence)."""
PROTOCOLS: tuple[Protocol, ...] = get_args(Protocol)

AdvRecipe = Literal["pgd", "fgsm_rs"]
"""Adversarial training: PGD, or FGSM with a random start (the cheap recipe)."""
ADV_RECIPES: tuple[AdvRecipe, ...] = get_args(AdvRecipe)

ExecutorKind = Literal["local", "ray"]
"""Where sweep cells run (``engine.run.executors``)."""
EXECUTORS: tuple[ExecutorKind, ...] = get_args(ExecutorKind)

ModelKind = Literal["relu", "attn", "qkv"]
"""The models by their spec names: 2L-ReLU, MLP-Attn, QKV-Attn (``engine.models``)."""
MODEL_KINDS: tuple[ModelKind, ...] = get_args(ModelKind)

InfluenceContext = Literal["refit", "fixed"]
"""influence_check: refit the attention context without the point, or keep it fixed."""
INFLUENCE_CONTEXTS: tuple[InfluenceContext, ...] = get_args(InfluenceContext)

GradientMethod = Literal["cg", "exact"]
"""The gradient influence's Hessian solve: conjugate gradients or the exact Hessian."""
GRADIENT_METHODS: tuple[GradientMethod, ...] = get_args(GradientMethod)

InfluenceTruth = Literal["pbrf", "retrain", "both"]
"""influence_check's ground truth: the proximal Bregman response (warm-started at the
trained weights), retraining from scratch, or both side by side."""
INFLUENCE_TRUTHS: tuple[InfluenceTruth, ...] = get_args(InfluenceTruth)
MODEL_LABELS: dict[str, str] = {"relu": "2L-ReLU", "attn": "MLP-Attn", "qkv": "QKV-Attn"}
"""Model kind → the display name every table, headline and panel prints."""


def check_flip(
    *, top_frac: float, intervention: str, retrain: bool = False, ci: str = "wilson"
) -> None:
    """The flip protocol's own limits, checked once for ``FlipOptions``
    (``engine.malleability.protocol``) and the run spec's ``flip`` section:
    ``ConfigError`` naming the ``flip.*`` field. Here, not beside the protocol, so that
    reading a spec imports no torch."""
    if retrain:
        raise ConfigError(
            "flip.retrain",
            True,
            "not supported yet: influences are recomputed with the trained weights frozen (paper)",
        )
    if intervention not in INTERVENTIONS:
        raise ConfigError("flip.intervention", intervention, f"one of {', '.join(INTERVENTIONS)}")
    if not (isinstance(top_frac, (int, float)) and 0 < top_frac <= 1):
        raise ConfigError("flip.top_frac", top_frac, "a fraction in (0, 1]")
    if ci not in CI_METHODS:
        raise ConfigError("ci", ci, f"one of {', '.join(CI_METHODS)}")
