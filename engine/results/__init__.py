"""Results: the statistics every summary, report and panel uses (one implementation each).

``engine.results`` is numeric code: it never imports ``engine.experiments`` or a front end.
"""

from engine.results.rows import (
    Series,
    flip_text,
    num,
    series_over_seeds,
)
from engine.results.stats import (
    CI_METHODS,
    TREND_ALPHA,
    Z95,
    MeanStd,
    Pooled,
    Trend,
    above_chance,
    clopper_pearson_interval,
    finite,
    mean_std,
    pooled_rate,
    proportion_ci,
    ratio,
    spearman,
    trend,
    wilson_interval,
)

__all__ = [
    "above_chance",
    "Series",
    "flip_text",
    "num",
    "series_over_seeds",
    "CI_METHODS",
    "TREND_ALPHA",
    "Z95",
    "MeanStd",
    "Pooled",
    "Trend",
    "clopper_pearson_interval",
    "finite",
    "mean_std",
    "pooled_rate",
    "proportion_ci",
    "ratio",
    "spearman",
    "trend",
    "wilson_interval",
]
