"""Loss-landscape geometry (docs/protocol.md#landscape): filter-normalised surfaces and Hessian sharpness.

- ``filter_normalized_direction``: Li et al. (2018) random directions.
- ``surface_1d`` / ``surface_2d`` / ``interpolate``: batched (vmap) loss curves.
- ``hessian_top_eigenvalue(s)`` / ``hessian_trace``: power iteration, Lanczos and
  Hutchinson on Hessian-vector products over the trainable parameters.
- ``adaptive_sharpness``: Kwon et al. (2021)'s max of L(w + ε) − L(w) over
  ‖ε/|w|‖₂ ≤ ρ by projected gradient ascent (invariant under the same rescaling).
- ``curve_width`` / ``width_censored``: the width of a 1-D basin at a loss threshold;
  ``basin_width`` widens the grid until the basin closes
  (invariant under the ReLU rescaling w_r → c·w_r, a_r → a_r/c: claim 6's measure).

The loss is the training data loss (``engine.train.data_loss``) unless ``loss=`` or
``l2=`` say otherwise; see ``objective.py``.
"""

from engine.landscape.adaptive import (
    ADAPTIVE_RHO,
    ADAPTIVE_STEPS,
    AdaptiveSharpness,
    adaptive_sharpness,
    adaptive_sharpness_flat,
)
from engine.landscape.directions import filter_normalize, filter_normalized_direction
from engine.landscape.hessian import (
    EigResult,
    EigsResult,
    TraceResult,
    hessian_top_eigenvalue,
    hessian_top_eigenvalues,
    hessian_trace,
    hvp_fn,
)
from engine.landscape.objective import Objective, make_objective, trainable_parameters
from engine.landscape.surfaces import (
    BasinWidth,
    Curve1D,
    Surface2D,
    basin_width,
    curve_width,
    interpolate,
    interpolation_grid,
    surface_1d,
    surface_2d,
    width_censored,
)

__all__ = [
    "ADAPTIVE_RHO",
    "ADAPTIVE_STEPS",
    "AdaptiveSharpness",
    "adaptive_sharpness",
    "adaptive_sharpness_flat",
    "Curve1D",
    "EigResult",
    "EigsResult",
    "Objective",
    "Surface2D",
    "TraceResult",
    "BasinWidth",
    "basin_width",
    "curve_width",
    "filter_normalize",
    "filter_normalized_direction",
    "hessian_top_eigenvalue",
    "hessian_top_eigenvalues",
    "hessian_trace",
    "hvp_fn",
    "interpolate",
    "interpolation_grid",
    "make_objective",
    "surface_1d",
    "surface_2d",
    "trainable_parameters",
    "width_censored",
]
