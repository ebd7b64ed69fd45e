"""MLP-Attn: the two-layer network behind linearized attention (docs/protocol.md#models)."""

from __future__ import annotations

import torch
from torch import nn

from engine.models.attention import LinearizedAttention
from engine.models.two_layer import TwoLayerNet, normalize_rows


class AttentionHead(nn.Module):
    """An attention transform (``self.attention``: x [n, d] → features [n, d']) followed by
    the two-layer head (``self.mlp``): the plumbing MLP-Attn and QKV-Attn share."""

    attention: nn.Module
    mlp: TwoLayerNet

    @property
    def head(self) -> TwoLayerNet:
        """The two-layer network that follows the attention."""
        return self.mlp

    @property
    def width(self) -> int:
        return self.mlp.width

    @property
    def n_out(self) -> int:
        return self.mlp.n_out

    def set_context(self, context: torch.Tensor) -> None:
        """Recompute the attention's C from a new context [n, d] (embedded rows, ``embed``)."""
        self.attention.set_context(context)  # type: ignore[operator]

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Pixels [n, d] → the rows a context is made of (unit norm; data.center: centred)."""
        embed = getattr(self.attention, "embed", None)
        return embed(x) if callable(embed) else normalize_rows(x)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d] → the first layer's input [n, d'] (the attention's output)."""
        return self.attention(x)

    def forward_features(self, xt: torch.Tensor) -> torch.Tensor:
        return self.mlp.forward_features(xt)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d] (raw pixels or unit-norm) → f [n, n_out]."""
        return self.mlp.forward_features(self.features(x))


class MLPAttn(AttentionHead):
    """f(x) = TwoLayerNet(Cx/‖Cx‖) with C = XᵀX of the context (training) set.

    Same parameters and initialisation as ``TwoLayerNet`` for the same seed, so the
    two models differ only in the attention transform. Output shape [n, n_out].
    """

    def __init__(
        self,
        context: torch.Tensor,
        width: int,
        n_out: int = 1,
        *,
        sigma_w: float = 0.01,
        train_output: bool = False,
        seed: int = 0,
        dtype: torch.dtype = torch.float32,
        input_shift: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        self.attention = LinearizedAttention(context.to(dtype), input_shift)
        self.mlp = TwoLayerNet(
            context.shape[1],
            width,
            n_out,
            sigma_w=sigma_w,
            train_output=train_output,
            normalize_input=False,
            seed=seed,
            dtype=dtype,
        )

    @property
    def fixed_features(self) -> bool:
        """True: the attention's C is a buffer, so Cx̂/‖Cx̂‖ can be computed once per
        training run (until ``set_context`` changes C)."""
        return True

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d] → Cx̂/‖Cx̂‖ [n, d], the first layer's input."""
        return self.attention(x)
