"""Influence of training points on test losses (docs/protocol.md#influence).

Sign convention everywhere: I[t, i] is the change of test point t's loss when training
point i is removed, so positive = helpful.

- ``ntk_loo_influence``: kernel leave-one-out on a (empirical) NTK, no retraining.
- ``refit_loo``: the same quantity by actually refitting kernel ridge (ground truth).
- ``gradient_influence``: Koh & Liang's (1/n) ∇ℓ_tᵀH⁻¹∇ℓ_i, H the Hessian of the training
  objective with its λI (exact / CG / LiSSA).
- ``retrain``: the ground truth by retraining and the agreement of an estimator with it.
"""

from engine.influence.gradient import METHODS, conjugate_gradient, gradient_influence
from engine.influence.kernel_loo import loo_prediction_change, ntk_loo_influence, refit_loo
from engine.influence.losses import LOSSES, encode_targets, pointwise_loss

__all__ = [
    "LOSSES",
    "METHODS",
    "conjugate_gradient",
    "encode_targets",
    "gradient_influence",
    "loo_prediction_change",
    "ntk_loo_influence",
    "pointwise_loss",
    "refit_loo",
]
