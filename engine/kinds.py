"""The names of the engine's strategies as ``Literal`` types, each defined once.

Pure typing (no torch), so the spec (``engine.run.spec``, which reads its field
types off these annotations) and the numeric packages share one definition; each tuple
is its type's values in order, for validators and help texts.
"""

from __future__ import annotations

from typing import Literal, get_args

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

Ranking = Literal["abs_signed_mean", "abs_mean", "signed_mean", "per_test"]
"""How the top 10 % most influential training points are ranked (``engine.malleability.ranking``)."""
RANKINGS: tuple[Ranking, ...] = get_args(Ranking)

Intervention = Literal["transformed", "curated", "adversarial"]
"""What is done to the selected training points (``engine.malleability.protocol``)."""
INTERVENTIONS: tuple[Intervention, ...] = get_args(Intervention)

Norm = Literal["linf", "l2"]
"""The attacks' threat-model norm."""
NORMS: tuple[Norm, ...] = get_args(Norm)

Until = Literal["fixed", "converged"]
"""How long a cell trains: ``train.epochs``, or until it settles (``engine.train.until``; cap
``train.max_epochs``)."""
UNTIL: tuple[Until, ...] = get_args(Until)

Protocol = Literal["paper", "centred"]
"""A reproduction's preprocessing: the paper's (pixels in [0, 1], unit rows) or with
per-pixel centring first (``data.center``; not in the paper, PAPER.md §6a)."""
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
MODEL_LABELS: dict[str, str] = {"relu": "2L-ReLU", "attn": "MLP-Attn", "qkv": "QKV-Attn"}
"""Model kind → the display name every table, headline and panel prints."""
