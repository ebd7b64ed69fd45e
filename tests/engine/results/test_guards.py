"""engine.results.guards: the convergence rule on curves with known answers, and the
marks every summary derives from the guard columns."""

from __future__ import annotations

import math

import pytest

from engine.results import (
    GUARDS,
    converged,
    convergence,
    failed_cells,
    flag,
    guard_note,
    guard_verdict,
    majority_rate,
    marked,
)


def _exp(epochs: int, tau: float, start: float = 1.0, limit: float = 0.2) -> list[float]:
    return [limit + (start - limit) * math.exp(-t / tau) for t in range(1, epochs + 1)]


def test_exponential_curve_converges_after_about_four_time_constants() -> None:
    """L = L∞ + A e^{−t/τ}: the last 10 % makes ≈ e^{−0.9E/τ}(1 − e^{−0.1E/τ}) of the
    decrease, under 1 % from E ≈ 4τ (3.5τ: 1.4 %, 5τ: 0.4 %)."""
    assert not converged(_exp(35, 10.0))
    c = convergence(_exp(50, 10.0))
    assert c.converged and c.reason == "settled" and c.share < 0.01
    # windows of 5 epochs: prev = epochs 41–45, last = 46–50 (1-based); the limit cancels
    a = [0.8 * math.exp(-t / 10.0) for t in range(1, 51)]
    prev, last = sum(a[40:45]) / 5, sum(a[45:50]) / 5
    assert c.share == pytest.approx((prev - last) / (a[0] - last), rel=1e-12)


def test_steady_crawl_is_not_converged_however_small_its_slope() -> None:
    """A straight line falling 0.05 over 2000 epochs (MLP-Attn on its plateau): each
    window makes 10 % of the decrease, far above 1 %, whatever the scale."""
    crawl = [2.30 - 0.05 * t / 2000 for t in range(2000)]
    c = convergence(crawl)
    assert not c.converged and c.reason == "still falling"
    assert c.share == pytest.approx(0.1, rel=0.06)


def test_initial_plateau_is_not_converged() -> None:
    """Flat at its start (noise only): never left its initial loss, so not converged."""
    import random

    rng = random.Random(0)
    flat = [2.3026 + 0.002 * rng.gauss(0, 1) for _ in range(50)]
    c = convergence(flat)
    assert not c.converged and c.reason == "never left its initial loss"


def test_noise_around_a_limit_counts_as_settled_but_noise_does_not_hide_a_crawl() -> None:
    """After a real decrease, small noise and no trend: settled. A slow crawl (0.1 % of the
    loss an epoch) under noise of the same size is still falling: noise is no excuse."""
    import random

    rng = random.Random(1)
    curve = _exp(40, 3.0) + [0.2 + 0.002 * rng.gauss(0, 1) for _ in range(60)]
    assert converged(curve)
    crawl = [1.0 - 0.001 * t + 0.01 * rng.gauss(0, 1) for t in range(50)]
    assert convergence(crawl).reason == "still falling"


def test_floor_too_few_epochs_and_non_finite() -> None:
    assert convergence([1.0, 0.5, 1e-5, 1e-5]).reason == "below floor"
    assert convergence([1.0, 0.5, 0.4]).reason == "too few epochs"
    assert not converged([])
    assert convergence([1.0, float("nan"), 0.5, 0.4]).reason == "non-finite loss"


def test_majority_rate_and_flag() -> None:
    assert majority_rate([1.0, -1.0, 1.0, 1.0]) == 0.75
    assert majority_rate([0, 1, 2, 3, 4]) == 0.2
    assert math.isnan(majority_rate([]))
    import torch

    assert majority_rate(torch.tensor([3, 3, 8])) == pytest.approx(2 / 3)
    assert flag(True) is True and flag("False") is False and flag("true") is True
    assert flag("0") is False and flag(1) is True and flag("") is None and flag(None) is None
    assert flag(float("nan")) is None


def _rows(flags: dict[tuple[str, int], tuple[bool, bool]]) -> list[dict]:
    return [
        {"model": m, "width": w, "seed": 0, "converged": c, "above_chance": a}
        for (m, w), (c, a) in flags.items()
    ]


def test_failed_cells_note_and_verdict() -> None:
    rows = _rows(
        {
            ("2L-ReLU", 16): (True, True),
            ("MLP-Attn", 16): (False, True),
            ("MLP-Attn", 64): (False, False),
        }
    )
    rows.append(
        {
            "model": "MLP-Attn",
            "width": "64",
            "seed": "0",
            "converged": "False",
            "above_chance": "False",
        }
    )
    f = failed_cells(rows)
    assert f == {
        "not converged": {"MLP-Attn": ["m=16 seed=0", "m=64 seed=0"]},
        "at chance": {"MLP-Attn": ["m=64 seed=0"]},
    }
    assert guard_note(f, "2L-ReLU") == ""
    note = guard_note(f, "MLP-Attn", 2)
    assert (
        note
        == "not converged in 2 of 2 cells (m=16 seed=0, m=64 seed=0); at chance in 1 of 2 cells (m=64 seed=0)"
    )
    assert marked("x 1.0", note).startswith("x 1.0 ⚠ not converged") and marked("x", "") == "x"
    assert marked("x", note).endswith(": their numbers are not results")
    assert guard_verdict(rows) == "models not converged and at chance"
    assert guard_verdict(rows[:1]) is None
    assert guard_verdict([{"model": "a", "width": 4}]) is None  # older rows: unknown, not failed
    assert [w for _, w in GUARDS] == ["not converged", "at chance"]


def test_constant_loss_and_the_baseline_start() -> None:
    """The best constant predictor: MSE 1 − mean² for ±1 targets, the label entropy for
    classes (ln 10 balanced). A curve whose first epoch sits above that loss and then
    hovers at it has not left its start (MLP-Attn on CIFAR-10 3 vs 8)."""
    from engine.results import constant_loss

    assert constant_loss([1.0, -1.0, 1.0, -1.0]) == pytest.approx(1.0)
    assert constant_loss([1.0, 1.0, 1.0, -1.0]) == pytest.approx(1 - 0.5**2)
    assert constant_loss(list(range(10)) * 3) == pytest.approx(math.log(10))
    assert math.isnan(constant_loss([]))
    hover = [1.08, 1.05] + [1.0 + 0.002 * (-1) ** t for t in range(38)]
    assert convergence(hover).converged  # against its own first epoch it "settled"
    c = convergence(hover, baseline=1.0)
    assert not c.converged and c.reason == "never left its initial loss"
    assert converged(_exp(50, 10.0), baseline=1.0)  # a real decrease is unaffected
