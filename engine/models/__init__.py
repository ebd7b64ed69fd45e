"""Models of PAPER.md §2: TwoLayerNet (2L-ReLU), LinearizedAttention, MLPAttn."""

from __future__ import annotations

import torch
from torch import nn

from engine.errors import ConfigError
from engine.models.attention import LinearizedAttention
from engine.models.mlp_attn import MLPAttn
from engine.models.two_layer import TwoLayerNet, normalize_rows

MODEL_KINDS = ("relu", "attn")
MODEL_LABELS = {"relu": "2L-ReLU", "attn": "MLP-Attn"}


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
) -> nn.Module:
    """Build ``relu`` (2L-ReLU) or ``attn`` (MLP-Attn) for training data ``context`` [n, d]."""
    if kind == "relu":
        return TwoLayerNet(
            context.shape[1], width, n_out, sigma_w=sigma_w, train_output=train_output,
            seed=seed, dtype=dtype,
        )
    if kind == "attn":
        return MLPAttn(
            context, width, n_out, sigma_w=sigma_w, train_output=train_output, seed=seed,
            dtype=dtype,
        )
    raise ConfigError("model", kind, f"one of {', '.join(MODEL_KINDS)}")


__all__ = [
    "MODEL_KINDS",
    "MODEL_LABELS",
    "LinearizedAttention",
    "MLPAttn",
    "TwoLayerNet",
    "build_model",
    "normalize_rows",
]
