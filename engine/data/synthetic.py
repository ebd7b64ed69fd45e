"""Gaussian data with a prescribed Gram spectrum, for checking the theory exactly.

``make_synthetic`` returns X = U diag(√λ) Vᵀ with Haar-random orthonormal U [n, r] and
V [d, r] (r = min(n, d)), so the non-zero eigenvalues of G = X Xᵀ are exactly λ and
κ(G) = λ_max/λ_min is exactly the ``kappa`` asked for (for n > d, G has rank d and this is
κ_d, the condition number of its rank-d part). Rows are NOT renormalised: that would change
the spectrum. Labels are the sign of ⟨x, w⟩ for a direction w.

``load_dataset("synthetic")`` is different on purpose: so that it is interchangeable with
the image data sets, it draws a fixed population (seed 0, 6,000 points, d = 64, κ = 1e3,
geometric spectrum), min-max scales it to [0, 1] (one global affine map) and, like every
Dataset, gives unit-norm rows in ``x_train``. Both steps move the spectrum, so use
``make_synthetic`` directly when the exact κ matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from engine.data.raw import RawData, RawSplit
from engine.errors import ConfigError

SPECTRA = ("geometric", "linear")
# the fixed population behind load_dataset("synthetic")
POP_TRAIN, POP_TEST, POP_D, POP_KAPPA, POP_SEED = 5000, 1000, 64, 1e3, 0


@dataclass(frozen=True)
class SyntheticData:
    """``x`` [n, d], ``y`` [n] (±1), ``eigenvalues`` [r] of X Xᵀ (descending, non-zero part),
    ``u`` [n, r], ``v`` [d, r] (orthonormal columns), ``direction`` [d] (unit, labels' w)."""

    x: torch.Tensor
    y: torch.Tensor
    eigenvalues: torch.Tensor
    u: torch.Tensor
    v: torch.Tensor
    direction: torch.Tensor

    @property
    def kappa(self) -> float:
        """λ_max / λ_min of the non-zero spectrum of X Xᵀ."""
        return float(self.eigenvalues[0] / self.eigenvalues[-1])


def _haar(rows: int, cols: int, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    g = torch.randn(rows, cols, generator=gen, dtype=torch.float64)
    q, r = torch.linalg.qr(g)
    # fixing the signs of diag(R) makes Q Haar-distributed rather than QR-algorithm dependent
    return (q * torch.sign(torch.diagonal(r)).where(torch.diagonal(r) != 0, 1.0)).to(dtype)


def _eigenvalues(r: int, kappa: float | None, spectrum: str | Sequence[float]) -> torch.Tensor:
    if isinstance(spectrum, str):
        if spectrum not in SPECTRA:
            raise ConfigError(
                "spectrum",
                spectrum,
                f"one of {', '.join(SPECTRA)} or a list of {r} positive numbers",
            )
        k = 100.0 if kappa is None else float(kappa)
        if not (np.isfinite(k) and k >= 1):
            raise ConfigError("kappa", kappa, "a finite number ≥ 1")
        if r == 1 and k != 1:
            raise ConfigError("kappa", kappa, "1 (a rank-1 Gram matrix has κ = 1)")
        t = torch.linspace(0, 1, r, dtype=torch.float64)
        lam = k**-t if spectrum == "geometric" else 1 - (1 - 1 / k) * t
    else:
        lam = torch.as_tensor(list(spectrum), dtype=torch.float64)
        if lam.shape != (r,) or not bool((lam > 0).all()) or not bool(torch.isfinite(lam).all()):
            raise ConfigError("spectrum", spectrum, f"{r} = min(n, d) positive finite eigenvalues")
        lam = torch.sort(lam, descending=True).values
        if kappa is not None and not np.isclose(float(lam[0] / lam[-1]), kappa, rtol=1e-9):
            raise ConfigError(
                "kappa", kappa, f"None or the spectrum's own ratio {float(lam[0] / lam[-1]):g}"
            )
    return lam


def make_synthetic(
    n: int,
    d: int,
    *,
    kappa: float | None = 100.0,
    spectrum: str | Sequence[float] = "geometric",
    direction: str = "random",
    normalize_trace: bool = True,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
) -> SyntheticData:
    """X [n, d] whose Gram matrix X Xᵀ has non-zero eigenvalues with ratio exactly ``kappa``.

    ``spectrum``: "geometric" (λ_i = κ^{-i/(r-1)}), "linear" (evenly spaced from 1 to 1/κ)
    or the r = min(n, d) eigenvalues themselves (then ``kappa`` must be None or match).
    ``normalize_trace`` scales λ so that Σλ = n (mean squared row norm 1; κ unchanged).
    ``direction``: "random" (a seeded unit vector) or "top" (V's first column, so the labels
    align with G's top eigenvector). ``y = sign(X w)`` with sign(0) = +1. Seeded through a
    ``torch.Generator``; rows are not renormalised.
    """
    if not (isinstance(n, int) and n >= 1):
        raise ConfigError("n", n, "a positive integer")
    if not (isinstance(d, int) and d >= 1):
        raise ConfigError("d", d, "a positive integer")
    if direction not in ("random", "top"):
        raise ConfigError("direction", direction, "random or top")
    r = min(n, d)
    lam = _eigenvalues(r, kappa, spectrum)
    if normalize_trace:
        lam = lam * (n / lam.sum())
    gen = torch.Generator().manual_seed(int(seed))
    u = _haar(n, r, gen, torch.float64)
    v = _haar(d, r, gen, torch.float64)
    x = (u * lam.sqrt()) @ v.T
    if direction == "top":
        w = v[:, 0].clone()
    else:
        w = torch.randn(d, generator=gen, dtype=torch.float64)
        w = w / w.norm()
    y = torch.where(x @ w >= 0, 1.0, -1.0).to(torch.float64)
    return SyntheticData(x.to(dtype), y, lam, u.to(dtype), v.to(dtype), w.to(dtype))


def load_synthetic_raw() -> RawData:
    """The fixed population behind ``load_dataset("synthetic")`` (see the module docstring).

    Label 0 ("positive") is ⟨x, w⟩ ≥ 0, label 1 ("negative") the rest, so the default
    classes (0, 1) give targets +1 / −1 matching the sign.
    """
    n = POP_TRAIN + POP_TEST
    s = make_synthetic(n, POP_D, kappa=POP_KAPPA, seed=POP_SEED)
    x = s.x.numpy()
    x = (x - x.min()) / (x.max() - x.min())
    labels = np.where(s.y.numpy() > 0, 0, 1).astype(np.int64)
    tr = POP_TRAIN
    origin = f"make_synthetic(n={n}, d={POP_D}, kappa={POP_KAPPA:g}, seed={POP_SEED})"
    note = (
        f"synthetic: fixed population {origin}, min-max scaled to [0, 1]; scaling and row "
        "normalisation change its spectrum (use engine.data.make_synthetic for an exact κ)"
    )
    return RawData(
        name="synthetic",
        splits={
            "train": RawSplit(x[:tr], labels[:tr], origin=origin),
            "test": RawSplit(x[tr:], labels[tr:], origin=origin),
        },
        class_names=("positive", "negative"),
        image_shape=(POP_D,),
        scale=1.0,
        source=origin,
        notes=(note,),
    )
