"""A ReLU head's PBRF data (``ReluHead``), shared by the polish's rounds
(``engine.influence.pbrf_relu_rounds``) and its driver (``engine.influence.pbrf_relu``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ReluHead:
    """A ReLU head's PBRF data, float64: z [n, m] = W*φ_j (training pre-activations),
    gram [n, n] = ΦΦᵀ, a [m, K] output weights, t [n, K] encoded targets; the test side
    zt [t, m], cross [t, n] = Φ_t Φᵀ, tt [t, K]."""

    z: torch.Tensor
    gram: torch.Tensor
    a: torch.Tensor
    t: torch.Tensor
    zt: torch.Tensor
    cross: torch.Tensor
    tt: torch.Tensor

    @classmethod
    def from_span(
        cls, output: torch.Tensor, inp: torch.Tensor, inp_t: torch.Tensor, t, tt
    ) -> ReluHead:
        """From ``span_problem``'s head inputs [z* | ψ] (train [n, m + r], test [t, m + r]),
        its output weights a [m, K] and encoded targets t [n, K], tt [t, K]."""
        m = output.shape[0]
        psi, psi_t = inp[:, m:], inp_t[:, m:]
        return cls(inp[:, :m], psi @ psi.T, output, t, inp_t[:, :m], psi_t @ psi.T, tt)

    def out(self, z: torch.Tensor) -> torch.Tensor:
        """Pre-activations [.., m] → outputs [.., K]."""
        return torch.relu(z) @ self.a / self.a.shape[0] ** 0.5
