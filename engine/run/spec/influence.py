"""The ``flip`` and ``influence_check`` sections of a run spec: influence, its malleability and its ground truth (docs/protocol.md#defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.kinds import (
    ADV_RECIPES,
    ATTACKS,
    GRADIENT_METHODS,
    INFLUENCE_CONTEXTS,
    INFLUENCE_TRUTHS,
    NORMS,
    RANKINGS,
    check_flip,
)
from engine.ridge import check_ridge_rule
from engine.run.spec.checks import (
    MAX_STEP,
    MAX_WIDTH,
    _check,
    _nonneg_float,
    _pos_float,
    _pos_int,
    _width,
)

if TYPE_CHECKING:
    pass


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
    """Most L-BFGS iterations of the PBRF truth before the active set over the ReLU kinks (2L-ReLU, MLP-Attn; its noise floor starts it after twice as many)."""
    pbrf_tol: float = 1e-6
    """The PBRF's convergence: each point's (generalised, at ReLU kinks) gradient norm at most this times its starting one."""
    pbrf_min_points: int = 30
    """The fewest removed points whose PBRF solve met ``pbrf_tol`` for a seed's PBRF truth to be judged: the statistics use those points only, and below this count the seed is not resolved; a run removing fewer points needs all of them (ours, chosen by the width of the agreement's interval at that count, docs/protocol.md#influence)."""
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
            _pos_int(self.pbrf_min_points) and self.pbrf_min_points >= 3,
            "influence_check.pbrf_min_points",
            self.pbrf_min_points,
            "an integer ≥ 3 (a rank correlation needs three)",
        )
        _check(
            self.context in INFLUENCE_CONTEXTS,
            "influence_check.context",
            self.context,
            "refit or fixed",
        )
