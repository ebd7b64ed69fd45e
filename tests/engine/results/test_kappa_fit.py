"""``engine.results.kappa``: the points of ``kappa_sweep`` and the fits against log κ(G),
on synthetic rows with known answers (docs/protocol.md#kappa-sweep)."""

from __future__ import annotations

import math
import random

import pytest

from engine.results import kappa as kr
from engine.results.stats import linear_fit
from engine.results.tables import KappaFlipRow, KappaNtkRow, KappaSweepRow


def _point(alpha: float, kappa: float, model: str, **kw) -> KappaSweepRow:
    return KappaSweepRow(
        alpha=alpha,
        model=model,
        kappa_G=kappa,
        kappa_d=kappa * 2,
        slope_ok=True,
        flip_ok=True,
        **kw,
    )


def _sweep(f, noise: float, seed: int = 0) -> list[KappaSweepRow]:
    """Nine α points, log10 κ from 6 down to 4, flip_ratio = f(log10 κ) + noise."""
    rng = random.Random(seed)
    rows = []
    for i in range(9):
        lk = 6 - 0.25 * i
        y = f(lk) + rng.gauss(0, noise)
        rows += [
            _point(i / 8, 10**lk, kr.ATTN, flip_ratio=y, lin_slope=y),
            _point(i / 8, 10**lk, kr.RELU, flip_ratio=y, lin_slope=0.0),
        ]
    return rows


def test_a_known_slope_is_recovered_within_its_interval():
    rows = _sweep(lambda lk: 0.7 + 0.9 * lk, noise=0.05)
    f = kr.fit(rows, "flip_ratio")
    assert f.n == 9 and f.lo < 0.9 < f.hi and f.p < 1e-6 and f.r2 > 0.95
    assert f.hi - f.lo < 0.2  # an interval, not a shrug
    # κ³ is the same fit a third of the slope: what the data cannot tell apart
    lk = [math.log10(r.kappa_G) for r in rows if r.model == kr.ATTN]
    y = [r.flip_ratio for r in rows if r.model == kr.ATTN]
    cubed = linear_fit([3 * v for v in lk], y)
    assert cubed.slope == pytest.approx(f.slope / 3) and cubed.r2 == pytest.approx(f.r2)
    assert cubed.p == pytest.approx(f.p)


def test_no_dependence_gives_an_interval_that_covers_zero():
    covered = 0
    for seed in range(20):
        f = kr.fit(_sweep(lambda lk: 1.5, noise=0.3, seed=seed), "flip_ratio")
        covered += f.lo <= 0 <= f.hi
    assert covered >= 17  # a 95% interval: 19 of 20 expected, 17 allows for chance


def test_flagged_points_are_left_out_of_the_fits():
    rows = _sweep(lambda lk: 0.5 * lk, noise=0.0)
    # a wild value at a point whose 2L-ReLU failed a guard: the ratio fit ignores the α
    bad = rows[0].alpha
    rows = [
        kr._with(r, flip_ratio=100.0, flip_ok=r.model == kr.ATTN) if r.alpha == bad else r
        for r in rows
    ]
    f = kr.fit(rows, "flip_ratio")
    assert f.n == 8 and f.slope == pytest.approx(0.5)
    assert kr.fit(rows, "lin_slope").n == 9  # MLP-Attn's own point passed its guards


def test_points_pool_counts_take_the_ratio_and_slopes_across_seeds():
    ntk, flips = [], []
    for seed, b in ((0, 0.10), (1, 0.12), (2, 0.14)):
        for w in (64, 256, 1024):
            for model, slope in ((kr.ATTN, b), (kr.RELU, -b)):
                ntk.append(
                    KappaNtkRow(
                        alpha=0.5,
                        model=model,
                        width=w,
                        seed=seed,
                        lin_distance_rel=0.3 + slope * math.log(w),
                        converged=True,
                    )
                )
        flips += [
            KappaFlipRow(alpha=0.5, model=kr.ATTN, seed=seed, n_flipped=6, n_selected=10),
            KappaFlipRow(alpha=0.5, model=kr.RELU, seed=seed, n_flipped=2, n_selected=10),
        ]
    spectra = {0.5: {"rank": 7, "kappa_G": 1e4, "kappa_d": 2e4, "kappa_G_cubed": 1e12}}
    pts = {r.model: r for r in kr.points(ntk, flips, spectra, "digits")}
    attn = pts[kr.ATTN]
    assert attn.lin_slope == pytest.approx(0.12) and attn.lin_slope_low < 0.12 < attn.lin_slope_high
    assert pts[kr.RELU].lin_slope == pytest.approx(-0.12)
    assert attn.flip_rate == pytest.approx(18 / 30) and attn.flip_low < 0.6 < attn.flip_high
    assert attn.flip_ratio == pytest.approx(3.0) and pts[kr.RELU].flip_ratio == pytest.approx(3.0)
    assert attn.kappa_G == 1e4 and attn.rank == 7 and attn.failed_cells == 0
    assert attn.slope_ok and attn.flip_ok
    # one MLP-Attn cell not converged: it leaves its seed's slope and flags the point
    ntk[0] = KappaNtkRow.from_row({**ntk[0].to_row(), "converged": False})
    pts = {r.model: r for r in kr.points(ntk, flips, spectra, "digits")}
    attn = pts[kr.ATTN]
    assert attn.slope_ok is False and attn.flip_ok is True and attn.failed_cells == 1
    assert pts[kr.RELU].slope_ok is True
    s = kr.summarize(list(pts.values()), "digits")
    assert s["flagged_alphas"] == [0.5]
    assert [ln for ln in s["headline"] if "α = 0.5" in ln] == [
        "⚠ α = 0.5, MLP-Attn: a cell behind its claim-1 slope failed a guard; left out of the fits"
    ]
    assert kr.fit(list(pts.values()), "lin_slope").n == 0  # left out (and too few anyway)


def test_kappa_and_kappa_d_are_compared_on_the_same_points():
    # y follows log κ_d exactly; κ(G) is κ_d with a wobble; one point has κ_d infinite
    rows = []
    for i, (kg, kd) in enumerate(((1e6, 1e6), (3e5, 1e5), (1e5, 3e4), (5e4, 1e4), (3e4, math.inf))):
        y = math.log10(kd) if math.isfinite(kd) else 99.0
        rows.append(kr._with(_point(i / 4, kg, kr.ATTN, lin_slope=y), kappa_d=kd))
    s = kr.summarize(rows, "x")["fits"]["lin_slope_attn"]
    assert s["kappa_d"]["points"] == s["kappa_G_same"]["points"] == 4
    assert s["kappa_d"]["r2"] == pytest.approx(1.0) and s["kappa_G_same"]["r2"] < 1.0
    assert s["kappa_G"]["points"] == 5  # the fit against κ(G) alone keeps every point
