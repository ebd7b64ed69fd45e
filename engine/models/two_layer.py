"""The two-layer network of docs/protocol.md#models in NTK parameterisation."""

from __future__ import annotations

import math

import torch
from torch import nn

from engine.errors import ConfigError


def normalize_rows(x: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Scale each row of ``x`` [n, d] to unit ℓ2 norm (all-zero rows stay zero)."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(eps)


def _shift(shift: torch.Tensor, d: int, dtype: torch.dtype) -> torch.Tensor:
    """A per-pixel shift [d] (``data.center``), validated."""
    s = shift.detach().reshape(-1)
    if s.numel() != d:
        raise ConfigError("input_shift", tuple(shift.shape), f"[{d}] (one value per input pixel)")
    return s.to(dtype).clone()


class TwoLayerNet(nn.Module):
    """f(x) = m^{-1/2} Σ_r a_r ReLU(w_rᵀ x̃), x̃ = x/‖x‖ (docs/protocol.md#models).

    ``weight`` W [m, d] is trained and initialised N(0, σ_w² I); ``output`` a [m, n_out]
    is ±1, fixed (a buffer) unless ``train_output``. Output shape [n, n_out].

    The structured NTK code relies on ``features(x)`` (the input of the first layer,
    x̃ [n, d]) and ``head`` (this module), which ``MLPAttn`` provides too.
    """

    def __init__(
        self,
        d_in: int,
        width: int,
        n_out: int = 1,
        *,
        sigma_w: float = 0.01,
        train_output: bool = False,
        normalize_input: bool = True,
        seed: int = 0,
        dtype: torch.dtype = torch.float32,
        input_shift: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        if int(d_in) < 1:
            raise ConfigError("d_in", d_in, "a positive integer")
        if int(width) < 1:
            raise ConfigError("width", width, "a positive integer (e.g. 4, 8, ..., 4096)")
        if int(n_out) < 1:
            raise ConfigError("n_out", n_out, "a positive integer")
        if not (sigma_w > 0 and math.isfinite(sigma_w)):
            raise ConfigError("sigma_w", sigma_w, "a positive finite number (paper: 0.01)")
        self.d_in, self.width, self.n_out = int(d_in), int(width), int(n_out)
        self.sigma_w = float(sigma_w)
        self.train_output = bool(train_output)
        self.normalize_input = bool(normalize_input)
        g = torch.Generator().manual_seed(int(seed))
        w = torch.randn(self.width, self.d_in, generator=g, dtype=torch.float64) * self.sigma_w
        a = torch.randint(0, 2, (self.width, self.n_out), generator=g).to(torch.float64) * 2 - 1
        self.weight = nn.Parameter(w.to(dtype))
        # data.center: the training set's per-pixel mean, subtracted before the unit-norm
        # scaling (None: the paper's preprocessing, x/‖x‖)
        self.input_shift: torch.Tensor | None
        self.register_buffer(
            "input_shift", None if input_shift is None else _shift(input_shift, self.d_in, dtype)
        )
        if self.train_output:
            self.output = nn.Parameter(a.to(dtype))
        else:
            self.register_buffer("output", a.to(dtype))

    @property
    def head(self) -> TwoLayerNet:
        """The two-layer part (this module), as ``MLPAttn.head`` is for attention."""
        return self

    @property
    def fixed_features(self) -> bool:
        """True: ``features`` has no trainable parameter, so training may compute it once."""
        return True

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d] → x̃ [n, d], the first layer's input."""
        if not self.normalize_input:
            return x
        return normalize_rows(x if self.input_shift is None else x - self.input_shift)

    def forward_features(self, xt: torch.Tensor) -> torch.Tensor:
        """x̃ [n, d] → f [n, n_out]."""
        h = torch.relu(xt @ self.weight.T)
        return h @ self.output / math.sqrt(self.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d] (raw or unit-norm; normalised here) → f [n, n_out]."""
        return self.forward_features(self.features(x))

    def extra_repr(self) -> str:
        return (
            f"d_in={self.d_in}, width={self.width}, n_out={self.n_out}, "
            f"sigma_w={self.sigma_w}, train_output={self.train_output}"
        )
