"""Width thresholds against hand-computed values (docs/claims.md#claim-2)."""

from __future__ import annotations

import math

import pytest

from engine.spectral import PAPER_SPECTRA, n_ln_n, orders_beyond, paper_spectrum, width_thresholds


def test_mnist_paper_setting_by_hand():
    # κ = 1.2e3: κ⁶ = 1.2⁶·1e18 = 2.985984e18; ln 60000 = 11.00209984 → n ln n = 660125.99
    th = width_thresholds(1.2e3, 1.2e3, 60_000)
    assert th.v1 == pytest.approx(2.985984e18, rel=1e-12)
    assert th.v2 == pytest.approx(2.985984e18 * 660125.99, rel=1e-8)
    assert th.v2 == pytest.approx(1.9711e24, rel=1e-4)  # PAPER: "m ≫ 10²⁴" (v2)
    assert th.relu == pytest.approx(1.44e6, rel=1e-12)
    assert th.relu_v2 == pytest.approx(1.44e6 * 660125.99, rel=1e-8)
    assert th.v1_orders == pytest.approx(math.log10(2.985984e18) - 12, abs=1e-12)
    assert th.v2_orders == pytest.approx(12.2947, abs=1e-4)


def test_cifar_paper_setting_by_hand():
    # κ = 8.7e3: 8.7⁶ = 433626.201009 → κ⁶ = 4.33626e23; ln 50000 = 10.81977828 → 540988.91
    th = width_thresholds(8.7e3, 8.7e3, 50_000)
    assert th.v1 == pytest.approx(4.33626201009e23, rel=1e-10)
    assert th.v2 == pytest.approx(2.34587e29, rel=1e-5)  # PAPER v2: "m ≫ 10²⁹"
    assert th.relu == pytest.approx(7.569e7, rel=1e-12)


def test_fallback_and_helpers():
    th = width_thresholds(10.0, math.inf, 100)
    assert th.v2_kappa == "kappa" and th.v2 == pytest.approx(1e6 * 100 * math.log(100))
    th = width_thresholds(10.0, None, 100)
    assert th.v2_kappa == "kappa"
    th = width_thresholds(10.0, 20.0, 100)
    assert th.v2_kappa == "kappa_d" and th.v2 == pytest.approx(20.0**6 * 100 * math.log(100))
    assert orders_beyond(1e12) == 0 and orders_beyond(1e24) == pytest.approx(12)
    assert math.isinf(orders_beyond(math.inf))
    assert n_ln_n(1) == 0.0 and n_ln_n(math.e**2) == pytest.approx(2 * math.e**2)
    assert math.isinf(width_thresholds(1e60, 1e60, 10).v1)  # overflow becomes inf, not an error


def test_paper_module_is_consistent_with_its_bounds():
    for name, p in PAPER_SPECTRA.items():
        assert paper_spectrum(name) is p
        th = width_thresholds(p.kappa, p.kappa, p.n)
        assert th.v2 > p.m_v2  # the quoted v2 bounds follow from κ⁶ n ln n
        assert th.v1 == pytest.approx(p.kappa**6)
    assert paper_spectrum("CIFAR-10") is PAPER_SPECTRA["cifar10"]
    assert paper_spectrum("mnist", (3, 8)) is None
    assert paper_spectrum("digits") is None
