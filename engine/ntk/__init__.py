"""NTK engine (docs/protocol.md#ntk): analytic Θ∞, empirical Θ_m, the NTK predictor, distances.

Multi-output convention: ``empirical_ntk`` returns [n1, n2] for one output and
[n1, n2, K, K] for K outputs (``ntk_blocks_to_matrix`` → [n1·K, n2·K]); the analytic
kernels return the per-output block [n1, n2] (the full Θ∞ is that ⊗ I_K).
"""

from engine.ntk.analytic import (
    analytic_ntk,
    analytic_ntk_for,
    analytic_ntk_general,
    analytic_ntk_with_output,
    nngp_relu,
)
from engine.ntk.distances import NTKDistance, kernel_distance, ntk_distance
from engine.ntk.empirical import (
    METHODS,
    empirical_ntk,
    jacobian_ntk,
    matrix_to_ntk_blocks,
    ntk_blocks_to_matrix,
)
from engine.ntk.linearized import LIN_METHODS, Linearized
from engine.ntk.paper import PAPER_TABLE1, paper_ntk_distances
from engine.ntk.regression import cholesky_jitter, kernel_regression
from engine.ntk.structured import has_structure, structured_ntk
from engine.ridge import RIDGE_RULES, Ridge, objective_ridge, resolve_ridge

__all__ = [
    "LIN_METHODS",
    "METHODS",
    "PAPER_TABLE1",
    "RIDGE_RULES",
    "NTKDistance",
    "Ridge",
    "analytic_ntk",
    "analytic_ntk_for",
    "analytic_ntk_general",
    "analytic_ntk_with_output",
    "cholesky_jitter",
    "empirical_ntk",
    "has_structure",
    "jacobian_ntk",
    "kernel_distance",
    "kernel_regression",
    "Linearized",
    "matrix_to_ntk_blocks",
    "nngp_relu",
    "ntk_blocks_to_matrix",
    "ntk_distance",
    "objective_ridge",
    "paper_ntk_distances",
    "resolve_ridge",
    "structured_ntk",
]
