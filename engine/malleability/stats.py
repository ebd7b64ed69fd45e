"""Binomial confidence intervals for flip rates: implemented once in ``engine.results.stats``
and re-exported here for the flip-rate protocol."""

from __future__ import annotations

from engine.results.stats import (
    CI_METHODS,
    Z95,
    clopper_pearson_interval,
    proportion_ci,
    wilson_interval,
)

__all__ = ["CI_METHODS", "Z95", "clopper_pearson_interval", "proportion_ci", "wilson_interval"]
