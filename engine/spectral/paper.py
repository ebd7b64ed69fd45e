"""The paper's reported spectral numbers (docs/claims.md#claim-2), for side-by-side display.

The paper does not say how κ was computed (preprocessing, n, tolerance); the v2 width
bounds match κ⁶ · n ln n with the full training sets, so ``n`` below is the full
training-set size. ``m_v1`` / ``m_v2`` are lower bounds as printed ("m ≫ 10^k").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperSpectrum:
    """One data set's κ and width bounds as the paper reports them."""

    dataset: str
    kappa: float
    """κ(G) (v1: "≈ 1.2·10³" MNIST, "≈ 8.7·10³" CIFAR-10)."""
    n: int
    """Full training-set size that reproduces the v2 bound (our inference)."""
    m_v1: float
    """v1 bound, printed as m ≫ this."""
    m_v2: float
    """v2 bound, printed as m ≫ this."""

    def as_dict(self) -> dict[str, float | int | str]:
        return {
            "dataset": self.dataset,
            "kappa": self.kappa,
            "n": self.n,
            "m_v1": self.m_v1,
            "m_v2": self.m_v2,
        }


PAPER_SPECTRA: dict[str, PaperSpectrum] = {
    "mnist": PaperSpectrum("mnist", kappa=1.2e3, n=60_000, m_v1=1e18, m_v2=1e24),
    "cifar10": PaperSpectrum("cifar10", kappa=8.7e3, n=50_000, m_v1=1e24, m_v2=1e29),
}


def paper_spectrum(name: str, classes: tuple[int, ...] | None = None) -> PaperSpectrum | None:
    """The paper's numbers for data set ``name`` ("mnist", "cifar10"), else None.

    The paper's κ is for the full 10-class data, so a class subset gets None.
    """
    if classes is not None:
        return None
    key = name.lower().replace("-", "").replace("_", "")
    return PAPER_SPECTRA.get(key)
