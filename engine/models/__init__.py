"""Models of docs/protocol.md#models: TwoLayerNet (2L-ReLU), LinearizedAttention, MLPAttn, QKVAttn (v2)."""

from __future__ import annotations

import torch
from torch import nn

from engine.errors import ConfigError
from engine.kinds import MODEL_KINDS, MODEL_LABELS
from engine.models.attention import LinearizedAttention
from engine.models.mlp_attn import MLPAttn
from engine.models.qkv import QKVAttention, QKVAttn
from engine.models.two_layer import TwoLayerNet, normalize_rows


def build_model(
    kind: str,
    context: torch.Tensor,
    width: int,
    n_out: int = 1,
    *,
    sigma_w: float = 0.01,
    train_output: bool = False,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    d_k: int | None = None,
    init_std: float | None = None,
    input_shift: torch.Tensor | None = None,
) -> nn.Module:
    """Build ``relu`` (2L-ReLU), ``attn`` (MLP-Attn) or ``qkv`` (QKV-Attn) for training
    data ``context`` [n, d]. ``d_k`` and ``init_std`` apply to ``qkv`` only (None: d_k = d,
    std 1/√d). ``input_shift`` [d]: the per-pixel mean subtracted before the unit-norm
    scaling (``data.center``; relu and attn), with ``context`` rows already centred."""
    if kind == "relu":
        return TwoLayerNet(
            context.shape[1],
            width,
            n_out,
            sigma_w=sigma_w,
            train_output=train_output,
            seed=seed,
            dtype=dtype,
            input_shift=input_shift,
        )
    if kind == "attn":
        return MLPAttn(
            context,
            width,
            n_out,
            sigma_w=sigma_w,
            train_output=train_output,
            seed=seed,
            dtype=dtype,
            input_shift=input_shift,
        )
    if input_shift is not None and kind == "qkv":
        raise ConfigError(
            "data.center", True, "false for QKV-Attn (centring is not supported there yet)"
        )
    if kind == "qkv":
        return QKVAttn(
            context,
            width,
            n_out,
            d_k=d_k,
            init_std=init_std,
            sigma_w=sigma_w,
            train_output=train_output,
            seed=seed,
            dtype=dtype,
        )
    raise ConfigError("model", kind, f"one of {', '.join(MODEL_KINDS)}")


__all__ = [
    "MODEL_KINDS",
    "MODEL_LABELS",
    "LinearizedAttention",
    "MLPAttn",
    "QKVAttention",
    "QKVAttn",
    "TwoLayerNet",
    "build_model",
    "normalize_rows",
]
