"""The ``kappa`` section: the sizes of the ``kappa_sweep`` experiment (docs/protocol.md#kappa-sweep)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.kinds import ATTACKS
from engine.run.spec.checks import _check, _pos_int

KAPPA_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)
"""The centring fractions α of the sweep: 0 the paper's preprocessing, 1 centred."""


@dataclass(frozen=True)
class KappaSpec:
    """What the effects depend on (experiment ``kappa_sweep``): claims 1 and 3 at each
    centring fraction α, against the κ(G) measured there. Its own small sizes (ours,
    chosen so the default sweep fits 30 minutes on 2 cores for MNIST 3 vs 8, see
    docs/protocol.md#kappa-sweep); the run's seeds, models, optimiser and flip protocol."""

    fractions: tuple[float, ...] = KAPPA_FRACTIONS
    """Centring fractions α in [0, 1] (``data.center_fraction`` of each point)."""
    n_train: int = 300
    """Training examples of every point (class-balanced)."""
    n_test: int = 100
    """Test examples of every point."""
    widths: tuple[int, ...] = (64, 256, 1024)
    """Widths of the claim-1 slope (the linearized-twin distance against log width)."""
    epochs: int = 300
    """Epochs of every network and twin."""
    attack: str = "pgd"
    """The one attack of the flip rate."""
    eps: float = 0.3
    """Its ℓ∞ radius in pixel space."""
    pgd_steps: int = 10
    """PGD steps (α = 2.5·ε/steps)."""
    flip_width: int = 1024
    """Width of the flip-rate networks: one of ``widths``, so the models are reused."""

    def __post_init__(self) -> None:
        fr = tuple(self.fractions)
        _check(
            len(fr) >= 2
            and all(
                isinstance(a, (int, float)) and not isinstance(a, bool) and 0 <= a <= 1 for a in fr
            )
            and len(set(fr)) == len(fr),
            "kappa.fractions",
            self.fractions,
            "two or more distinct numbers from 0 to 1, e.g. 0,0.5,1",
        )
        object.__setattr__(self, "fractions", tuple(float(a) for a in fr))
        _check(
            _pos_int(self.n_train) and self.n_train >= 2,
            "kappa.n_train",
            self.n_train,
            "an integer ≥ 2",
        )
        _check(_pos_int(self.n_test), "kappa.n_test", self.n_test, "a positive integer")
        ws = tuple(self.widths)
        _check(
            len(ws) >= 2
            and all(_pos_int(w) and w <= 2**20 for w in ws)
            and len(set(ws)) == len(ws),
            "kappa.widths",
            self.widths,
            "two or more distinct widths, e.g. 64,256,1024",
        )
        object.__setattr__(self, "widths", tuple(sorted(ws)))
        _check(
            _pos_int(self.epochs) and self.epochs <= 10**6, "kappa.epochs", self.epochs, "1 to 1e6"
        )
        _check(self.attack in ATTACKS, "kappa.attack", self.attack, ", ".join(ATTACKS))
        _check(
            isinstance(self.eps, (int, float))
            and not isinstance(self.eps, bool)
            and math.isfinite(self.eps)
            and 0 < self.eps <= 1,
            "kappa.eps",
            self.eps,
            "a number in (0, 1]",
        )
        _check(_pos_int(self.pgd_steps), "kappa.pgd_steps", self.pgd_steps, "a positive integer")
        _check(
            self.flip_width in self.widths,
            "kappa.flip_width",
            self.flip_width,
            f"one of kappa.widths ({', '.join(map(str, self.widths))})",
        )
