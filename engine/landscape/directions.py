"""Filter-normalised random directions (Li et al. 2018, "Visualizing the Loss Landscape").

A direction δ has one tensor per trainable parameter. A *filter* is a slice along
the leading dimension: for ``TwoLayerNet`` the row w_r of W [m, d] (one hidden
unit) and, when the output layer is trained, the row a_r of a [m, n_out]; for a
conv weight [out, in, kh, kw] one output channel. Each filter of a Gaussian draw
is rescaled to the norm of the matching weight filter, ‖δ_r‖ = ‖θ_r‖, which makes
the plot invariant to the ReLU rescaling w_r → c·w_r, a_r → a_r/c. One-dimensional
parameters (biases) get a zero direction by default, as Li et al. do
(``ignore_1d=False`` normalises them as a whole vector instead). The models of this
project have no 1-D parameters.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.landscape.objective import Params, trainable_parameters


def _gaussian_like(p: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    # Draw on the generator's device in float64, then move: the same seed gives the
    # same direction on cpu and cuda and in float32 and float64.
    z = torch.randn(p.shape, generator=generator, device=generator.device, dtype=torch.float64)
    return z.to(p.device, p.dtype)


def filter_normalize(direction: Params, params: Params, *, ignore_1d: bool = True) -> Params:
    """Rescale each filter (leading-dim slice) of ``direction`` to the norm of ``params``'s.

    Zero weight filters give zero direction filters. Returns a new dict.
    """
    out: Params = {}
    for name, p in params.items():
        d = direction[name]
        if p.ndim <= 1:
            if ignore_1d:
                out[name] = torch.zeros_like(p)
            else:
                out[name] = d * (p.norm() / d.norm().clamp_min(torch.finfo(d.dtype).tiny))
            continue
        dims = tuple(range(1, p.ndim))
        pn = p.norm(dim=dims, keepdim=True)
        dn = d.norm(dim=dims, keepdim=True).clamp_min(torch.finfo(d.dtype).tiny)
        out[name] = d * (pn / dn)
    return out


def filter_normalized_direction(
    model: nn.Module,
    generator: torch.Generator | None = None,
    *,
    ignore_1d: bool = True,
) -> Params:
    """A seeded random direction over ``model``'s trainable parameters, filter-normalised.

    Returns {name: tensor of the parameter's shape, device and dtype}. Parameters are
    drawn in ``named_parameters`` order from ``generator`` (default: a fresh generator
    seeded 0), so two models with the same parameter shapes and the same seed get
    the same Gaussian draw, rescaled to their own weights.
    """
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    params = trainable_parameters(model)
    raw = {n: _gaussian_like(p, g) for n, p in params.items()}
    return filter_normalize(raw, params, ignore_1d=ignore_1d)
