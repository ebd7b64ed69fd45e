"""engine.results.stats against independent references (statistics, scipy)."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy.stats import binomtest, kendalltau, spearmanr

from engine.errors import ConfigError
from engine.results import (
    best_p,
    mean_std,
    pooled_rate,
    proportion_ci,
    ratio,
    spearman,
    trend,
    wilson_interval,
)
from engine.results.stats import EXACT_MAX


def test_mean_std_is_the_sample_std_and_skips_missing() -> None:
    vals = [0.3, 0.1, 0.7, 0.2]
    m, s, n = mean_std(vals + [float("nan"), None, float("inf")])
    assert n == 4
    assert m == pytest.approx(statistics.fmean(vals), rel=1e-15)
    assert s == pytest.approx(statistics.stdev(vals), rel=1e-14)  # n − 1, not n
    assert s > statistics.pstdev(vals)
    assert mean_std([5.0]) == (5.0, 0.0, 1)
    m, s, n = mean_std([])
    assert n == 0 and math.isnan(m) and math.isnan(s)
    # two seeds: the sample std is √2 × the population std (the old exp_ntk discrepancy)
    assert mean_std([1.0, 3.0]).std == pytest.approx(math.sqrt(2) * statistics.pstdev([1.0, 3.0]))


@pytest.mark.parametrize(
    "counts", [[(3, 10), (5, 12)], [(0, 7), (0, 9)], [(20, 20)], [(1, 50), (4, 50), (0, 50)]]
)
def test_pooled_rate_is_the_wilson_interval_of_the_summed_counts(counts) -> None:
    p = pooled_rate(counts)
    k, n = sum(c[0] for c in counts), sum(c[1] for c in counts)
    assert (p.k, p.n) == (k, n) and p.rate == k / n
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert (p.lo, p.hi) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert p.lo <= p.rate <= p.hi
    assert p.half_width == pytest.approx((p.hi - p.lo) / 2)
    exact = pooled_rate(counts, "clopper_pearson")
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert (exact.lo, exact.hi) == pytest.approx((ref.low, ref.high), abs=1e-9)


def test_pooled_rate_without_counts() -> None:
    p = pooled_rate([(0, 0)])
    assert p.n == 0 and math.isnan(p.rate) and math.isnan(p.lo) and math.isnan(p.hi)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    with pytest.raises(ConfigError):
        proportion_ci(1, 2, "bayes")


def test_spearman_agrees_with_a_rank_count() -> None:
    xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    ys = [2.0, 1.0, 4.0, 3.0, 6.0, 5.0]
    rho, p = spearman(xs, ys)
    # ρ = 1 − 6 Σd² / (n(n² − 1)) without ties: each adjacent swap has d = ±1
    assert rho == pytest.approx(1 - 6 * 6 / (6 * 35))
    # exact: 42 of the 720 orderings have |ρ| ≥ 0.829 (tables: n = 6 needs |ρ| ≥ 0.886
    # for p < 0.05 two-sided); the t approximation says 0.042
    assert p == pytest.approx(42 / 720)
    # monotone relations: ρ = ±1, the same sign as Kendall's τ
    assert spearman(xs, [x**3 for x in xs])[0] == pytest.approx(1.0)
    assert spearman(xs, [-x for x in xs])[0] == pytest.approx(-1.0)
    assert math.copysign(1, kendalltau(xs, ys).statistic) == math.copysign(1, rho)
    assert all(math.isnan(v) for v in spearman([1, 2], [3, 4]))  # too few points
    assert all(math.isnan(v) for v in spearman([1, 2, 3], [7, 7, 7]))  # constant


def test_spearman_p_is_exact_for_few_points() -> None:
    """ρ = −1 over 4 widths is p = 2/4! (never below 0.05), not the t approximation's 0;
    ``best_p`` is the floor the x values allow (5 distinct: 2/5!; ties in x count)."""
    rho, p = spearman([4, 6, 8, 10], [4.0, 3.0, 2.0, 1.0])
    assert rho == pytest.approx(-1.0) and p == pytest.approx(2 / 24)
    assert best_p([4, 6, 8, 10]) == pytest.approx(2 / 24)
    assert best_p([4, 5, 6, 8, 10]) == pytest.approx(2 / 120)
    # 4 widths × 2 seeds (ties): |ρ| = 1 only for the 2⁴ orderings within each width's
    # pair, for either sign, of 8! in all
    assert best_p([4, 4, 6, 6, 8, 8, 10, 10]) == pytest.approx(2 * 2**4 / 40320)
    assert math.isnan(best_p([1, 1, 1]))
    # above EXACT_MAX the t approximation (scipy's) is used
    xs = list(range(EXACT_MAX + 2))
    ys = [x + (3 if x % 3 == 0 else 0) for x in xs]
    assert spearman(xs, ys)[1] == pytest.approx(spearmanr(xs, ys).pvalue)


def test_trend_words() -> None:
    ws = [math.log2(w) for w in (4, 16, 64, 256, 1024, 4096) for _ in (0, 1)]
    falling = [10.0 - x + 0.01 * i for i, x in enumerate(ws)]
    assert trend(ws, falling).word == "falls"
    assert trend(ws, [-v for v in falling]).word == "rises"
    assert trend(ws, [1.0] * len(ws)).word == "flat"
    assert trend([4, 4, 4], [1.0, 2.0, 3.0]).word == "n/a"
    t = trend([1, 2, 3], [3.0, 1.0, 2.0])
    assert t.word == "flat" and t.p >= 0.05


def test_ratio() -> None:
    assert ratio(6.0, 3.0) == 2.0
    for a, b in ((1.0, 0.0), (None, 1.0), (1.0, None), (float("nan"), 1.0), (1.0, float("inf"))):
        assert math.isnan(ratio(a, b))


def test_above_chance_is_the_one_sided_binomial_test() -> None:
    """Known answers: 10 of 10 beats a coin; 55 of 100 does not (p ≈ 0.18); 60 of 100 does
    (p ≈ 0.028); a 10-class model at 0.10 on 200 points is at chance; bad inputs are not."""
    from scipy.stats import binomtest

    from engine.results import above_chance

    assert above_chance(1.0, 10, 0.5)
    assert not above_chance(0.55, 100, 0.5)
    assert above_chance(0.60, 100, 0.5)
    assert binomtest(60, 100, 0.5, alternative="greater").pvalue < 0.05
    assert not above_chance(0.10, 200, 0.10)
    assert not above_chance(float("nan"), 100, 0.5)
    assert not above_chance(0.9, 0, 0.5)


def test_train_summary_flags_models_at_chance() -> None:
    """An untrained MLP-Attn (1 epoch on 10-class digits) is reported at chance; the
    headline says so and summary.json lists its cells."""
    from engine.experiments import RunSpec, run
    from engine.run.events import Finished

    spec = RunSpec.from_dict(
        {
            "experiment": "train",
            "seeds": [0],
            "data": {"name": "digits", "n_train": 100, "n_test": 100},
            "model": {"kinds": ["attn"], "widths": [16]},
            "train": {"epochs": 1},
        }
    )
    fin = [e for e in run(spec) if isinstance(e, Finished)][0]
    tr = fin.summary["train"]
    assert tr["at_chance"]["MLP-Attn"] == ["m=16 seed=0"]
    assert any("at chance in 1 of 1 cell (m=16 seed=0)" in line for line in tr["headline"])
    assert tr["failed_guards"]["at chance"] == {"MLP-Attn": ["m=16 seed=0"]}
    assert tr["not_converged"]["MLP-Attn"] == ["m=16 seed=0"]  # 1 epoch cannot tell


def test_wilson_textbook_value() -> None:
    # 3 of 10, 95%: (0.1078, 0.6032) (Wilson 1927; Newcombe 1998, Table I)
    lo, hi = wilson_interval(3, 10)
    assert lo == pytest.approx(0.1078, abs=1e-4) and hi == pytest.approx(0.6032, abs=1e-4)


def _flip_row(model: str, seed: int, k: int, n: int, attack: str = "pgd") -> dict[str, str]:
    """A flip_rates row as read back from the CSV (strings)."""
    return {
        "model": model,
        "dataset": "mnist",
        "attack": attack,
        "eps": "0.3",
        "training": "standard",
        "seed": str(seed),
        "flip_rate": repr(k / n),
        "spearman": "0.5",
        "n_selected": str(n),
        "n_flipped": str(k),
    }


def test_every_consumer_pools_the_same_counts() -> None:
    """flip_summary.pooled (summaries, reproduce, report) and the TUI's flip rows give the
    interval of pooled_rate over the integer counts: one implementation, one answer."""
    from engine.experiments.flip_summary import grid, pooled
    from malleability_tui.views.flips import flip_rows

    rows = [_flip_row("2L-ReLU", 0, 3, 10), _flip_row("2L-ReLU", 1, 5, 12)]
    rows += [_flip_row("MLP-Attn", 0, 0, 10), _flip_row("MLP-Attn", 1, 0, 12)]
    ref = pooled_rate([(3, 10), (5, 12)])
    p = pooled(rows[:2])
    assert p is not None and (p["k"], p["n"]) == (8, 22)
    assert (p["ci_low"], p["ci_high"]) == pytest.approx((100 * ref.lo, 100 * ref.hi))
    relu = next(r for r in flip_rows(rows) if r.model == "2L-ReLU")
    assert (relu.lo, relu.hi) == pytest.approx((ref.lo, ref.hi))
    # MLP-Attn / 2L-ReLU: 0 / 36.4% = 0; the reverse (ReLU at 0) has no ratio
    (cell,) = grid(rows)
    assert cell["ratio"] == 0.0
    swapped = [{**r, "model": "2L-ReLU" if r["model"] == "MLP-Attn" else "MLP-Attn"} for r in rows]
    assert grid(swapped)[0]["ratio"] is None
    assert math.isnan(ratio(1.0, 0.0)) and ratio(1.0, 4.0) == 0.25
