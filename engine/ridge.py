"""The kernel ridge that stands for a trained network: one rule for every kernel surrogate.

Used by the kernel leave-one-out influence (``flip.ridge``) and the NTK predictor
(``ntk.ridge``): both accept ``"objective"`` (default), ``"lambda"`` or a number, and both
resolve it here, so a run directory's ``objective:0.5`` always means the same thing.
(A top-level, torch-free module: the spec validates ridge options without loading torch.)

Derivation (MSE, the binary tasks of docs/protocol.md#training). The network is trained on

    R(θ) = (1/n) Σ_i (f(x_i; θ) − y_i)² + (λ/2) ‖θ‖²

(``engine.train.loop``: the mean of the squared error, no ½, plus (λ/2)‖θ‖²). Linearize
around the weights, f(x; θ) ≈ J(x) θ (for the two-layer ReLU net with fixed ±1 outputs this
is exact at every θ, f is positively homogeneous of degree 1 in W, so f = ∇_W f · W;
in general add f(x; θ₀) − J θ₀ to the targets). With J [n, P] the training Jacobian,
K = J Jᵀ the NTK:

    ∇R = (2/n) Jᵀ (J θ − y) + λ θ = 0   ⇒   θ = Jᵀ α,   (2/n)(K α − y) + λ α = 0
                                        ⇒   (K + (nλ/2) I) α = y.

So the minimiser of the linearized objective is kernel ridge regression with ridge
ρ = nλ/2 (0.5 for n = 1000, λ = 1e-3), and predictions f(x) = k(x)ᵀ α. The bare λ
(``"lambda"``) is the ridge of Σ_i(…)² + λ‖θ‖², a different objective: at λ = 1e-3 it
leaves the surrogate almost interpolating (docs/protocol.md#evidence). ``"nlambda"`` (nλ) is the
ridge of (1/n)Σ_i(…)² + λ‖θ‖² (the penalty without its ½), the other reading of §6a;
``influence_check`` compares all three with retraining.

Cross-entropy (the 10-class head): the minimiser of (1/n) Σ CE + (λ/2)‖θ‖² is not a
kernel ridge solution (its representer coefficients are α_i = (t_i − p_i)/(nλ), with p
the softmax). The kernel surrogates regress one-hot targets with the squared error
Σ_k (f_k − t_k)² on the shared per-output kernel, so ``objective`` gives them the ridge
that the same penalty implies for that surrogate, nλ/2 per output column (the outputs
share W; dropping the eNTK's off-diagonal output blocks makes the columns independent).
It is the surrogate's ridge, not a limit of the trained CE network; ``influence_check``
measures how well it stands for retraining.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.errors import ConfigError

RIDGE_RULES = ("objective", "lambda", "nlambda")
RIDGE_LOSSES = ("mse", "ce")


@dataclass(frozen=True)
class Ridge:
    """A resolved ridge: the number used and the rule that gave it."""

    value: float
    rule: str
    """objective | lambda | nlambda | value (a number given directly)."""

    @property
    def label(self) -> str:
        """``objective:0.5``, ``lambda:0.001``, ``nlambda:1`` or ``0.01`` (the run-directory
        spelling)."""
        return f"{self.value:g}" if self.rule == "value" else f"{self.rule}:{self.value:g}"


def objective_ridge(n: int, lam: float, loss: str = "mse") -> float:
    """The kernel ridge ρ = nλ/2 implied by (1/n)Σℓ + (λ/2)‖θ‖² (module docstring).

    ``n``: training points, ``lam``: the L2 coefficient λ, ``loss``: ``mse`` (exact for the
    linearized network) or ``ce`` (the ridge of the one-hot squared-error surrogate).
    """
    if loss not in RIDGE_LOSSES:
        raise ConfigError("loss", loss, f"one of {', '.join(RIDGE_LOSSES)}")
    if not (isinstance(n, int) and n >= 1):
        raise ConfigError("n", n, "a positive number of training points")
    if not (math.isfinite(lam) and lam >= 0):
        raise ConfigError("lam", lam, "a finite L2 coefficient ≥ 0")
    return 0.5 * n * lam


def check_ridge_rule(value: object, field: str) -> str | float:
    """Validate a ridge option: ``objective``, ``lambda``, ``nlambda`` or a positive number."""
    if isinstance(value, str):
        v = value.strip().lower()
        if v in RIDGE_RULES:
            return v
        try:
            value = float(v)
        except ValueError:
            raise ConfigError(
                field, value, "objective, lambda, nlambda or a positive number"
            ) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(field, value, "objective, lambda, nlambda or a positive number")
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(field, value, "objective, lambda, nlambda or a positive number")
    return float(value)


def resolve_ridge(
    rule: str | float, *, n: int, lam: float, loss: str = "mse", field: str = "ridge"
) -> Ridge:
    """``rule`` (objective | lambda | nlambda | a number) → ``Ridge`` for n training points, L2 λ.

    Raises ``ConfigError`` naming ``field`` when the rule gives no positive ridge (e.g.
    ``objective`` or ``lambda`` with λ = 0: give a number then).
    """
    r = check_ridge_rule(rule, field)
    if isinstance(r, float):
        return Ridge(r, "value")
    if r == "objective":
        value = objective_ridge(n, lam, loss)
    else:
        value = float(lam) * (n if r == "nlambda" else 1)
    if not value > 0:
        raise ConfigError(field, rule, f"a positive number when the L2 coefficient λ is {lam:g}")
    return Ridge(value, r)
