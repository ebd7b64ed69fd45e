"""Confidence intervals (against scipy) and the paper's table lookup."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest

from engine.errors import ConfigError
from engine.malleability import (
    clopper_pearson_interval,
    paper_flip_rate,
    paper_rate_for_run,
    paper_table_for,
    proportion_ci,
    wilson_interval,
)


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (17, 100), (1, 1)])
def test_intervals_match_scipy_and_contain_the_rate(k, n):
    w = wilson_interval(k, n)
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert w == pytest.approx((ref.low, ref.high), abs=1e-9)
    cp = clopper_pearson_interval(k, n)
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert cp == pytest.approx((ref.low, ref.high), abs=1e-9)
    for lo, hi in (w, cp):
        assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_interval_edge_cases():
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    with pytest.raises(ConfigError):
        proportion_ci(1, 2, "bayes")


def test_paper_numbers():
    assert paper_flip_rate(2, "mnist", "attn", "pgd") == 28.9
    assert paper_flip_rate(2, "mnist", "2L-ReLU", "fgsm") == 4.1
    assert paper_flip_rate(3, "cifar10", "MLP-Attn", "mim") == 14.8
    assert paper_flip_rate(4, "cifar10", "relu", "pgd_adversarial") == 36.5
    assert paper_flip_rate(2, "digits", "relu", "pgd") is None
    assert paper_table_for("mnist", None, "standard") == 2
    assert paper_table_for("mnist", (8, 3), "standard") == 3
    assert paper_table_for("mnist", (1, 7), "standard") is None
    assert paper_rate_for_run("mnist", None, "adversarial", "relu", "pgd") == 43.4
    assert paper_rate_for_run("mnist", None, "adversarial", "relu", "fgsm") is None
