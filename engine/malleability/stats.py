"""Binomial confidence intervals for flip rates."""

from __future__ import annotations

import math

from engine.errors import ConfigError

CI_METHODS = ("wilson", "clopper_pearson")
Z95 = 1.959963984540054  # Φ⁻¹(0.975)


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n (default 95%); (nan, nan) when n = 0."""
    if n <= 0:
        return float("nan"), float("nan")
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    # clamp round-off so the interval always contains p (and stays in [0, 1])
    return max(0.0, min(p, mid - half)), min(1.0, max(p, mid + half))


def clopper_pearson_interval(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact (Clopper–Pearson) interval of k/n at level 1 − alpha; (nan, nan) when n = 0."""
    from scipy.stats import beta

    if n <= 0:
        return float("nan"), float("nan")
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def proportion_ci(k: int, n: int, method: str = "wilson") -> tuple[float, float]:
    """95% interval of k/n by ``method`` (wilson | clopper_pearson)."""
    if method == "wilson":
        return wilson_interval(k, n)
    if method == "clopper_pearson":
        return clopper_pearson_interval(k, n)
    raise ConfigError("ci", method, f"one of {', '.join(CI_METHODS)}")
