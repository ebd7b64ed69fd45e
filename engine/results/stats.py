"""The statistics of every summary, report and panel, each written once.

* ``mean_std``: mean and *sample* standard deviation (n − 1) over seeds;
* ``wilson_interval`` / ``clopper_pearson_interval`` / ``proportion_ci``: 95% intervals
  of a proportion k/n from integer counts;
* ``pooled_rate``: flip counts pooled over seeds (Σk / Σn) with its interval;
* ``spearman`` / ``trend``: Spearman ρ (and p) and the one-word verdict of a trend;
* ``ratio``: a / b, NaN when either is missing or b is 0.

Pure Python (scipy only for ρ and Clopper–Pearson); inputs are plain numbers, NaN for
missing, so the engine, the CLI and the TUI get identical answers from the same rows.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterable
from typing import Any, NamedTuple

from engine.errors import ConfigError
from engine.kinds import CI_METHODS

Z95 = 1.959963984540054  # Φ⁻¹(0.975)
TREND_ALPHA = 0.05
"""p-value below which a Spearman trend counts as falling or rising."""
NAN = float("nan")


def finite(v: object) -> bool:
    """True for a real, finite number (False for None, strings, NaN, ±inf)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


class MeanStd(NamedTuple):
    """Mean, sample standard deviation and count of the finite values."""

    mean: float
    std: float
    n: int


def mean_std(vals: Iterable[float | None]) -> MeanStd:
    """Mean, sample std (n − 1; 0 for one value) and count of the finite values.

    Non-finite values (NaN, None, ±inf) are left out; (NaN, NaN, 0) when none is left.
    """
    v = [float(x) for x in vals if x is not None and math.isfinite(float(x))]
    if not v:
        return MeanStd(NAN, NAN, 0)
    m = math.fsum(v) / len(v)
    s = math.sqrt(math.fsum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return MeanStd(m, s, len(v))


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n (default 95%); (nan, nan) when n = 0."""
    if n <= 0:
        return NAN, NAN
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
        return NAN, NAN
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def above_chance(accuracy: float, n: int, chance: float, alpha: float = 0.05) -> bool:
    """Whether a test accuracy on ``n`` points beats ``chance`` (the majority-class rate):
    one-sided exact binomial test of round(accuracy·n) successes, p < ``alpha``.

    The precondition for reading a trained cell's numbers as a result: a model at chance
    has learned nothing the kernel comparisons or influences could stand for.
    """
    from scipy.stats import binomtest

    if not (n > 0 and math.isfinite(accuracy) and 0.0 <= chance < 1.0):
        return False
    k = min(n, max(0, round(accuracy * n)))
    return bool(binomtest(k, n, chance, alternative="greater").pvalue < alpha)


def proportion_ci(k: int, n: int, method: str = "wilson") -> tuple[float, float]:
    """95% interval of k/n by ``method`` (wilson | clopper_pearson)."""
    if method == "wilson":
        return wilson_interval(k, n)
    if method == "clopper_pearson":
        return clopper_pearson_interval(k, n)
    raise ConfigError("ci", method, f"one of {', '.join(CI_METHODS)}")


class Pooled(NamedTuple):
    """Counts pooled over seeds: k of n, the rate k/n and its 95% interval."""

    k: int
    n: int
    rate: float
    lo: float
    hi: float

    @property
    def half_width(self) -> float:
        """Half the interval's width (NaN without counts)."""
        return (self.hi - self.lo) / 2


def pooled_rate(counts: Iterable[tuple[int, int]], method: str = "wilson") -> Pooled:
    """Pool (k, n) integer counts (e.g. flipped of selected, per seed): Σk / Σn and its
    interval. Pairs with n ≤ 0 are left out; rate and interval are NaN when nothing is left."""
    k = n = 0
    for ki, ni in counts:
        if ni > 0:
            k += int(ki)
            n += int(ni)
    if n == 0:
        return Pooled(0, 0, NAN, NAN, NAN)
    lo, hi = proportion_ci(k, n, method)
    return Pooled(k, n, k / n, lo, hi)


EXACT_MAX = 8
"""Up to this many pairs the p-value of ``spearman`` is exact (all n! orderings); above it
the t approximation (scipy's), which is close there but says p = 0 for ρ = ±1."""


def spearman(xs: Iterable[float], ys: Iterable[float]) -> tuple[float, float]:
    """Spearman ρ and its two-sided p-value over the pairs where both are finite.

    (NaN, NaN) with fewer than 3 pairs or when either side is constant. With at most
    ``EXACT_MAX`` pairs the p-value is the exact permutation probability of a |ρ| at least
    as large (ties kept as average ranks): 4 widths, ρ = −1 gives p = 2/4! = 0.083, never
    below α = 0.05, where the t approximation says 0.
    """
    from scipy.stats import spearmanr

    pts = [(float(x), float(y)) for x, y in zip(xs, ys) if finite(x) and finite(y)]
    if len(pts) < 3 or len({x for x, _ in pts}) < 2 or len({y for _, y in pts}) < 2:
        return NAN, NAN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = spearmanr([x for x, _ in pts], [y for _, y in pts])
    rho = float(res.statistic)
    if len(pts) <= EXACT_MAX:
        return rho, _exact_p([x for x, _ in pts], [y for _, y in pts], rho)
    return rho, float(res.pvalue)


def _exact_p(xs: list[float], ys: list[float], rho: float) -> float:
    """P(|ρ| ≥ |rho|) over every ordering of ``ys`` against ``xs`` (n ≤ ``EXACT_MAX``)."""
    import numpy as np
    from scipy.stats import rankdata

    rx = rankdata(xs) - (len(xs) + 1) / 2
    ry = rankdata(ys) - (len(ys) + 1) / 2
    num = ry[_orderings(len(ys))] @ rx  # Σ rx·ry over each ordering; ρ ∝ it (both rank sets fixed)
    scale = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(np.mean(np.abs(num) / scale >= abs(rho) - 1e-12))


@functools.lru_cache(maxsize=EXACT_MAX)
def _orderings(n: int) -> Any:
    """Every permutation of range(n) as an int8 array [n!, n] (n ≤ ``EXACT_MAX``: 40,320 rows)."""
    from itertools import permutations

    import numpy as np

    return np.array(list(permutations(range(n))), dtype=np.int8)


def best_p(xs: Iterable[float]) -> float:
    """The smallest two-sided p-value ``spearman`` can give for these x values (y in the
    same order as x): when it is not below α, no data at these x can show a trend."""
    xs = [float(x) for x in xs if finite(x)]
    if len(xs) < 3 or len(set(xs)) < 2:
        return NAN
    return spearman(xs, xs)[1]


class Trend(NamedTuple):
    """Spearman ρ, p and the verdict: falls, rises, flat or n/a (too few points)."""

    rho: float
    p: float
    word: str


def trend(xs: Iterable[float], ys: Iterable[float], alpha: float = TREND_ALPHA) -> Trend:
    """Does ``ys`` fall or rise with ``xs``? ``falls``/``rises`` when p < alpha,
    ``flat`` otherwise (or for a constant ``ys``), ``n/a`` below 3 points or 2 distinct x."""
    xs, ys = list(xs), list(ys)
    pts = [(x, y) for x, y in zip(xs, ys) if finite(x) and finite(y)]
    if len(pts) < 3 or len({x for x, _ in pts}) < 2:
        return Trend(NAN, NAN, "n/a")
    rho, p = spearman(xs, ys)
    if not math.isfinite(rho):
        return Trend(NAN, NAN, "flat")
    word = "flat"
    if math.isfinite(p) and p < alpha:
        word = "falls" if rho < 0 else "rises" if rho > 0 else "flat"
    return Trend(rho, p, word)


def ratio(a: float | None, b: float | None) -> float:
    """a / b; NaN when either is missing or non-finite, or b is 0."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return NAN
    return float(a) / float(b)


class Slope(NamedTuple):
    """An OLS slope of log y on log x with its 95% interval (t with n − 2 degrees of
    freedom); NaN when fewer than three points or x does not vary."""

    slope: float
    lo: float
    hi: float
    n: int


def loglog_slope(x: Iterable[float], y: Iterable[float]) -> Slope:
    """Slope of log y against log x over the pairs where both are finite and > 0
    (``linear_fit`` on the logarithms)."""
    pts = [(math.log(a), math.log(b)) for a, b in zip(x, y, strict=True) if a > 0 and b > 0]
    f = linear_fit([a for a, _ in pts], [b for _, b in pts])
    return Slope(f.slope, f.lo, f.hi, f.n)


class Fit(NamedTuple):
    """An ordinary least-squares line y = a + b·x: the slope b with its 95% interval (t,
    n − 2 degrees of freedom), the two-sided p of b = 0, R² and the points used; NaN with
    fewer than three points or when x does not vary."""

    slope: float
    lo: float
    hi: float
    p: float
    r2: float
    n: int


def linear_fit(x: Iterable[float], y: Iterable[float]) -> Fit:
    """OLS of ``y`` on ``x`` over the pairs where both are finite (``scipy.stats.linregress``)."""
    pts = [(float(a), float(b)) for a, b in zip(x, y, strict=True) if finite(a) and finite(b)]
    n = len(pts)
    if n < 3 or len({a for a, _ in pts}) < 2:
        return Fit(NAN, NAN, NAN, NAN, NAN, n)
    from scipy.stats import linregress, t

    res = linregress([a for a, _ in pts], [b for _, b in pts])
    half = float(t.ppf(0.975, n - 2)) * float(res.stderr)
    b = float(res.slope)
    return Fit(b, b - half, b + half, float(res.pvalue), float(res.rvalue) ** 2, n)
