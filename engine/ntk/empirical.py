"""Empirical (finite-width) NTK Θ_m: the dispatcher and the generic Jacobian path (the
structured closed form is in ``engine.ntk.structured``).

Output convention: a model with one output gives [n1, n2]; a model with K > 1
outputs gives [n1, n2, K, K] with Θ[i, j, k, l] = ⟨∂f_k(x_i)/∂θ, ∂f_l(x'_j)/∂θ⟩
(``ntk_blocks_to_matrix`` turns it into the [n1·K, n2·K] matrix, row index i·K + k).
``output=k`` asks for the single block Θ[:, :, k, k] as [n1, n2].

Only parameters with ``requires_grad`` count, in both methods, so a frozen ±1 output
layer (the paper's setting) contributes nothing and a trained one adds its term.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.errors import ConfigError
from engine.kinds import NTK_METHODS as METHODS
from engine.kinds import NtkMethod as Method
from engine.ntk.structured import has_structure, structured_ntk


def ntk_blocks_to_matrix(theta: torch.Tensor) -> torch.Tensor:
    """[n1, n2, K, K] → [n1·K, n2·K] (row i·K + k, column j·K + l); [n1, n2] unchanged."""
    if theta.ndim == 2:
        return theta
    n1, n2, k1, k2 = theta.shape
    return theta.permute(0, 2, 1, 3).reshape(n1 * k1, n2 * k2)


def matrix_to_ntk_blocks(mat: torch.Tensor, k: int) -> torch.Tensor:
    """Inverse of ``ntk_blocks_to_matrix``: [n1·K, n2·K] → [n1, n2, K, K]."""
    n1, n2 = mat.shape[0] // k, mat.shape[1] // k
    return mat.reshape(n1, k, n2, k).permute(0, 2, 1, 3)


def empirical_ntk(
    model: nn.Module,
    x1: torch.Tensor,
    x2: torch.Tensor | None = None,
    *,
    method: Method = "auto",
    block_size: int | None = None,
    output: int | None = None,
) -> torch.Tensor:
    """Empirical NTK of ``model`` between x1 [n1, d] and x2 [n2, d] (default x1).

    ``method``: ``structured`` (closed form for TwoLayerNet / MLPAttn, O(n² + n·block)
    memory, never forms a Jacobian; for QKV-Attn ``engine.ntk.qkv.qkv_ntk``, exact over
    the attention projections and the head), ``jacobian`` (torch.func Jacobians of any module,
    contracted over all trainable parameters), ``auto`` (structured when the model has
    ``features`` and ``head``). ``block_size``: hidden units per block (structured) or
    samples per Jacobian block (jacobian); None: 4096 units, or as many samples as fit
    in ~2²⁶ Jacobian entries. ``output``: return only Θ[:, :, k, k].

    Returns [n1, n2] (one output, or ``output`` given) or [n1, n2, K, K], in the model's
    dtype on the model's device.
    """
    if method not in METHODS:
        raise ConfigError("method", method, "auto, structured or jacobian")
    if block_size is not None and not (isinstance(block_size, int) and block_size > 0):
        raise ConfigError("block_size", block_size, "a positive integer")
    from engine.ntk.qkv import has_qkv_structure, qkv_ntk

    qkv = has_qkv_structure(model)
    if method == "auto":
        method = "structured" if has_structure(model) or qkv else "jacobian"
    if method == "structured" and qkv:
        return qkv_ntk(model, x1, x2, block_size=block_size or 4096, output=output)
    if method == "structured":
        if not has_structure(model):
            raise ConfigError(
                "method",
                "structured",
                "a model with .features and a TwoLayerNet .head and no other trainable "
                "parameters (use jacobian)",
            )
        return structured_ntk(model, x1, x2, block_size=block_size or 4096, output=output)
    return jacobian_ntk(model, x1, x2, block_size=block_size, output=output)


# -- structured ------------------------------------------------------------------


# -- generic Jacobian path ----------------------------------------------------------


def jacobian_ntk(
    model: nn.Module,
    x1: torch.Tensor,
    x2: torch.Tensor | None = None,
    *,
    block_size: int | None = None,
    output: int | None = None,
) -> torch.Tensor:
    """Θ = J1 J2ᵀ over all ``requires_grad`` parameters, for any module (torch.func).

    The model must map [b, d] → [b, K] (or [b]) row by row. Per-sample Jacobians come
    from vmap(jacrev) over ``block_size`` samples at a time and are contracted block
    by block, so memory is O(n1·n2·K² + block·K·P). Shapes as in ``empirical_ntk``.
    """
    from torch.func import functional_call, jacrev, vmap

    params = {k: p.detach() for k, p in model.named_parameters() if p.requires_grad}
    if not params:
        raise ConfigError("model", type(model).__name__, "a model with trainable parameters")
    consts = {k: p.detach() for k, p in model.named_parameters() if not p.requires_grad}
    consts.update(dict(model.named_buffers()))
    first = next(iter(params.values()))
    dev, dt = first.device, first.dtype
    n_params = sum(p.numel() for p in params.values())

    def f(ps: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, {**ps, **consts}, (x[None],))
        out = out.reshape(-1)
        return out if output is None else out[int(output)][None]

    x1 = x1.to(dev, dt)
    x2v = x1 if x2 is None else x2.to(dev, dt)
    with torch.no_grad():
        n_total = int(model(x1[:1]).reshape(-1).numel())
    if output is not None and not (0 <= int(output) < n_total):
        raise ConfigError("output", output, f"an output index in 0..{n_total - 1}")
    n_out = n_total if output is None else 1
    b = block_size or max(1, 2**26 // max(1, n_out * n_params))
    jac = vmap(jacrev(f), in_dims=(None, 0))

    def flat(xb: torch.Tensor) -> torch.Tensor:
        j = jac(params, xb)  # name -> [b, K, *shape]
        return torch.cat([v.reshape(xb.shape[0], n_out, -1) for v in j.values()], dim=2)

    n1, n2 = x1.shape[0], x2v.shape[0]
    theta = torch.zeros(n1, n2, n_out, n_out, dtype=dt, device=dev)
    for i in range(0, n1, b):
        ji = flat(x1[i : i + b])
        for j in range(0, n2, b):
            if x2 is None and j < i:
                continue
            jj = ji if (x2 is None and j == i) else flat(x2v[j : j + b])
            blk = torch.einsum("akp,blp->abkl", ji, jj)
            theta[i : i + b, j : j + b] = blk
            if x2 is None and j > i:
                theta[j : j + b, i : i + b] = blk.permute(1, 0, 3, 2)
    if n_out == 1:
        return theta[:, :, 0, 0]
    return theta
