"""Parameter-free linearized attention (docs/protocol.md#models)."""

from __future__ import annotations

import torch
from torch import nn

from engine.errors import ConfigError
from engine.models.two_layer import normalize_rows


class LinearizedAttention(nn.Module):
    """x ↦ C x̂ / ‖C x̂‖ with C = X̂ᵀX̂ over the context set (rows unit-normalised).

    This is row i of X Xᵀ X (W_Q = W_K = W_V = I, exp(a) ≈ 1 + a, constant dropped)
    for a training point, and the same map applied to any other point. ``context``
    is [n, d]; the transductive option is simply a context that includes test points.
    """

    C: torch.Tensor
    input_shift: torch.Tensor | None

    def __init__(self, context: torch.Tensor, input_shift: torch.Tensor | None = None) -> None:
        super().__init__()
        self.register_buffer("C", self._gram(context))
        from engine.models.two_layer import _shift

        shift = (
            None if input_shift is None else _shift(input_shift, context.shape[1], context.dtype)
        )
        self.register_buffer("input_shift", shift)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d] (pixels) → x̂ [n, d]: minus ``input_shift`` (data.center), unit rows. The
        context rows of ``set_context`` are embedded rows (the data set's ``x_train``)."""
        return normalize_rows(x if self.input_shift is None else x - self.input_shift)

    @staticmethod
    def _gram(context: torch.Tensor) -> torch.Tensor:
        if context.ndim != 2 or context.shape[0] < 1:
            raise ConfigError("context", tuple(context.shape), "a non-empty [n, d] matrix")
        xc = normalize_rows(context)
        return xc.T @ xc

    def set_context(self, context: torch.Tensor) -> None:
        """Recompute C from a new context [n, d] (e.g. a perturbed training set)."""
        c = self._gram(context.to(self.C.device, self.C.dtype))
        if c.shape != self.C.shape:
            raise ConfigError("context", tuple(context.shape), f"d = {self.C.shape[0]} columns")
        self.C = c

    def transform(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d] → C x̂ [n, d] before the final normalisation."""
        return self.embed(x) @ self.C

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d] → normalise(C x̂) [n, d]."""
        return normalize_rows(self.transform(x))
