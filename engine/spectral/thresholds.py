"""Width thresholds for kernel-regime convergence (docs/claims.md#claim-2, docs/protocol.md#spectra).

* v1 (attention): m = κ(G)⁶, because the attention kernel G³ has κ(G³) = κ(G)³ and
  the kernel-regime bound needs m = Ω(κ(kernel)²).
* v2 (attention): m = κ_d(G)⁶ · n ln n (natural log), κ_d the condition number of the
  rank-min(n, d) truncation of G.
* ReLU counterparts (our reading of the paper's argument, not a number it prints): the
  same bound on the un-cubed kernel, m = κ(G)² (v1-style) and κ_d(G)² · n ln n (v2-style).

When κ_d is infinite (numerical rank below min(n, d): dead pixels, duplicate rows) the
v2-style thresholds use κ over the numerical rank instead — the truncation the rank cut
itself makes; ``v2_kappa`` records which one was used. The paper's v2 numbers match
κ⁶ n ln n with its finite κ, so it made a finite choice too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LARGEST_MODEL = 1e12
"""Parameters of today's largest models (docs/protocol.md#spectra: ~10¹²)."""


def orders_beyond(m: float, reference: float = LARGEST_MODEL) -> float:
    """log10(m / reference): orders of magnitude beyond ~10¹² parameters (inf for inf)."""
    if not m > 0:
        return -math.inf
    if math.isinf(m):
        return math.inf
    return math.log10(m) - math.log10(reference)


def n_ln_n(n: int) -> float:
    """n · ln n (natural log; the paper's quoted numbers match ln)."""
    return float(n) * math.log(float(n)) if n > 1 else 0.0


def _pow(k: float, p: int) -> float:
    try:
        return float(k) ** p
    except OverflowError:  # κ > ~1e51 makes κ⁶ overflow a float
        return math.inf


@dataclass(frozen=True)
class WidthThresholds:
    """Widths m needed for the kernel regime, and how far they lie beyond 10¹²."""

    v1: float
    """Attention, v1: κ(G)⁶."""
    v2: float
    """Attention, v2: κ_d(G)⁶ · n ln n (κ over the numerical rank when κ_d is inf)."""
    relu: float
    """2L-ReLU, v1-style: κ(G)² (our reading)."""
    relu_v2: float
    """2L-ReLU, v2-style: κ_d(G)² · n ln n (our reading, same fallback as v2)."""
    v2_kappa: str
    """Which κ entered the v2-style thresholds: "kappa_d" or "kappa" (fallback)."""

    @property
    def v1_orders(self) -> float:
        """Orders of magnitude of the v1 threshold beyond 10¹² parameters."""
        return orders_beyond(self.v1)

    @property
    def v2_orders(self) -> float:
        return orders_beyond(self.v2)

    @property
    def relu_orders(self) -> float:
        return orders_beyond(self.relu)

    @property
    def relu_v2_orders(self) -> float:
        return orders_beyond(self.relu_v2)

    def as_dict(self) -> dict[str, float | str]:
        return {
            "width_threshold_v1": self.v1,
            "width_threshold_v2": self.v2,
            "relu_threshold": self.relu,
            "relu_threshold_v2": self.relu_v2,
            "v1_orders_beyond_1e12": self.v1_orders,
            "v2_orders_beyond_1e12": self.v2_orders,
            "relu_orders_beyond_1e12": self.relu_orders,
            "relu_v2_orders_beyond_1e12": self.relu_v2_orders,
            "v2_kappa": self.v2_kappa,
        }


def width_thresholds(kappa: float, kappa_d: float | None, n: int) -> WidthThresholds:
    """Thresholds for condition number ``kappa`` (numerical rank), ``kappa_d`` and n samples.

    ``kappa_d`` None or inf falls back to ``kappa`` for the v2-style thresholds.
    """
    use_d = kappa_d is not None and math.isfinite(kappa_d)
    k2 = float(kappa_d) if kappa_d is not None and use_d else float(kappa)
    nl = n_ln_n(n)
    return WidthThresholds(
        v1=_pow(kappa, 6),
        v2=_pow(k2, 6) * nl,
        relu=_pow(kappa, 2),
        relu_v2=_pow(k2, 2) * nl,
        v2_kappa="kappa_d" if use_d else "kappa",
    )
