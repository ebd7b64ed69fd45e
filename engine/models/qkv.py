"""QKV-Attn: trainable Q/K/V linearized attention before the two-layer head (v2 extension).

docs/protocol.md#qkv: v2 extends the argument from the parameter-free layer
(W_Q = W_K = W_V = I) to trainable projections under standard initialisation. With
exp(a) ≈ 1 + a and the constant dropped, attention over the context set X̂ [n, d]
(rows unit-normalised) is (X̂W_Q)(X̂W_K)ᵀ(X̂W_V); its row for a point x is

    u(x) = (x̂ W_Q) M,    M = W_Kᵀ C W_V ∈ R^{d_k×d_k},    C = X̂ᵀX̂ ∈ R^{d×d},

followed by ℓ2 row normalisation and the same two-layer head as MLP-Attn. C is fixed
(a buffer), so no n×n matrix is ever formed. For W_Q = W_K = W_V = I this is exactly
MLP-Attn (``tests/engine/models/test_qkv.py``).

The ℓ2 normalisation makes the output invariant to rescaling any one projection, so
no 1/√d_k score scale is applied (it would change nothing but the gradient scale).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from engine.errors import ConfigError
from engine.models.attention import LinearizedAttention
from engine.models.mlp_attn import AttentionHead
from engine.models.two_layer import TwoLayerNet, normalize_rows

ATTENTION_SEED_OFFSET = 1_000_003
"""The projections draw from seed + this, so the head's init equals MLP-Attn's for a seed."""


class QKVAttention(nn.Module):
    """x [b, d] ↦ normalise(x̂ W_Q W_Kᵀ C W_V) [b, d_k] with trainable W_Q, W_K, W_V [d, d_k].

    Standard initialisation: every entry N(0, 1/d) (``init_std`` overrides the std).
    ``set_context`` recomputes C (e.g. for a perturbed training set), as for MLP-Attn.
    """

    C: torch.Tensor

    def __init__(
        self,
        context: torch.Tensor,
        d_k: int | None = None,
        *,
        init_std: float | None = None,
        seed: int = 0,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        c = LinearizedAttention._gram(context.to(dtype))
        d = c.shape[0]
        dk = d if d_k is None or d_k == 0 else d_k
        if not (isinstance(dk, int) and not isinstance(dk, bool) and dk > 0):
            raise ConfigError("qkv.d_k", d_k, "a positive integer (0 or None: d_k = d)")
        std = 1.0 / math.sqrt(d) if init_std is None else float(init_std)
        if not (std > 0 and math.isfinite(std)):
            raise ConfigError("qkv.init_std", init_std, "a positive finite number (standard: 1/√d)")
        self.d_in, self.d_k, self.init_std = d, int(dk), std
        self.register_buffer("C", c)
        g = torch.Generator().manual_seed(int(seed) + ATTENTION_SEED_OFFSET)
        for name in ("w_q", "w_k", "w_v"):
            w = torch.randn(d, self.d_k, generator=g, dtype=torch.float64) * std
            setattr(self, name, nn.Parameter(w.to(dtype)))

    w_q: nn.Parameter
    w_k: nn.Parameter
    w_v: nn.Parameter

    def set_context(self, context: torch.Tensor) -> None:
        """Recompute C from a new context [n, d] (e.g. a perturbed training set)."""
        c = LinearizedAttention._gram(context.to(self.C.device, self.C.dtype))
        if c.shape != self.C.shape:
            raise ConfigError("context", tuple(context.shape), f"d = {self.C.shape[0]} columns")
        self.C = c

    def set_identity(self) -> None:
        """W_Q = W_K = W_V = I (needs d_k = d): the parameter-free layer of MLP-Attn."""
        if self.d_k != self.d_in:
            raise ConfigError("qkv.d_k", self.d_k, f"d_k = d = {self.d_in} for identity weights")
        with torch.no_grad():
            for w in (self.w_q, self.w_k, self.w_v):
                w.copy_(torch.eye(self.d_in, dtype=w.dtype, device=w.device))

    def mixing(self) -> torch.Tensor:
        """M = W_Kᵀ C W_V [d_k, d_k]."""
        return self.w_k.T @ (self.C @ self.w_v)

    def transform(self, x: torch.Tensor) -> torch.Tensor:
        """x [b, d] → u = x̂ W_Q W_Kᵀ C W_V [b, d_k], before the final normalisation.

        Evaluated in whichever order costs fewer flops: through M (d²d_k + d d_k², once)
        or right to left along the batch (b(3 d d_k + d²)); both are exact for W = I.
        """
        d, dk, b = self.d_in, self.d_k, x.shape[0]
        q = normalize_rows(x) @ self.w_q
        if d * d * dk + d * dk * dk + b * dk * dk < b * (2 * d * dk + d * d):
            return q @ self.mixing()
        return ((q @ self.w_k.T) @ self.C) @ self.w_v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [b, d] → normalise(u) [b, d_k]."""
        return normalize_rows(self.transform(x))

    def extra_repr(self) -> str:
        return f"d={self.d_in}, d_k={self.d_k}, init_std={self.init_std:.4g}"


class QKVAttn(AttentionHead):
    """f(x) = TwoLayerNet(normalise(x̂ W_Q W_Kᵀ C W_V)), the head as in MLP-Attn.

    Trainable: W_Q, W_K, W_V [d, d_k] and the head's W [m, d_k] (and a when
    ``train_output``). The head is initialised exactly like MLP-Attn's for the same seed
    (``d_k = d``). ``features`` depends on trainable parameters, so code that caches the
    first layer's input (fixed-feature fast paths) must not use it: ``fixed_features``
    is False. Output shape [b, n_out].
    """

    fixed_features = False
    """The first layer's input changes during training (unlike 2L-ReLU and MLP-Attn)."""

    attention: QKVAttention

    def __init__(
        self,
        context: torch.Tensor,
        width: int,
        n_out: int = 1,
        *,
        d_k: int | None = None,
        init_std: float | None = None,
        sigma_w: float = 0.01,
        train_output: bool = False,
        seed: int = 0,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.attention = QKVAttention(context, d_k, init_std=init_std, seed=seed, dtype=dtype)
        self.mlp = TwoLayerNet(
            self.attention.d_k,
            width,
            n_out,
            sigma_w=sigma_w,
            train_output=train_output,
            normalize_input=False,
            seed=seed,
            dtype=dtype,
        )

    @property
    def d_k(self) -> int:
        return self.attention.d_k

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """x [b, d] → z = normalise(x̂ W_Q M) [b, d_k], the head's input."""
        return self.attention(x)
