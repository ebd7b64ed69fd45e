"""The kernel drift of a training network: ‖Θ_t − Θ_0‖_F / ‖Θ_0‖_F of its empirical NTK on
a fixed subset of its training points (docs/protocol.md), read every ``ntk.drift_every``
epochs by ``engine.run.training.Trainer`` and reported as the ``kernel_drift`` metric."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def drift_probe(
    model: nn.Module, x: torch.Tensor, seed: int, ntk: Any
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(probe points [p, ...], Θ_0 on them [p, p]) of ``model`` at initialisation: the
    ``ntk.drift_points`` points of x [n, ...] a generator seeded ``seed`` draws; (x[:0],
    None) when ``ntk.drift_every`` is 0 (no drift recorded)."""
    if not ntk.drift_every:
        return x[:0], None
    try:
        from engine.ntk import empirical_ntk
    except ImportError:  # pragma: no cover - during development only
        return x[:0], None
    g = torch.Generator().manual_seed(seed)
    idx = torch.randperm(x.shape[0], generator=g)[: ntk.drift_points].to(x.device)
    probe = x[idx]
    with torch.no_grad():
        k0 = empirical_ntk(model, probe, output=0 if n_out(model) > 1 else None)
    return probe, k0


def drift(model: nn.Module, probe: torch.Tensor, k0: torch.Tensor) -> float:
    """‖Θ_t − Θ_0‖_F / ‖Θ_0‖_F of ``model`` now on ``probe`` (``drift_probe``'s pair)."""
    from engine.ntk import empirical_ntk

    # For K outputs the first diagonal block: the co-activation pattern is what drifts
    # (with fixed ±1 heads every diagonal block is the same matrix).
    with torch.no_grad():
        kt = empirical_ntk(model, probe, output=0 if n_out(model) > 1 else None)
    return float(torch.linalg.norm(kt - k0) / torch.linalg.norm(k0).clamp_min(1e-300))


def n_out(model: nn.Module) -> int:
    """The outputs K of a model with a ``head`` (1 otherwise)."""
    head = getattr(model, "head", None)
    return int(getattr(head, "n_out", 1))
