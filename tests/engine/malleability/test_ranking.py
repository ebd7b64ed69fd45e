"""Rankings and the protocol grid: selections, per-pair flips, one attack for many protocols."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.malleability import count_flips, flip_rate, flip_rates, select
from engine.models import build_model, normalize_rows

DT = torch.float64


def test_rankings_select_what_they_say():
    infl = torch.tensor([[3.0, -1.0, 0.5, -4.0], [-3.0, -0.9, 0.4, 1.0]], dtype=DT)
    # s = [0, -0.95, 0.45, -1.5]; mean|I| = [3, 0.95, 0.45, 2.5]
    assert select(infl, "abs_signed_mean", 0.5).points.tolist() == [3, 1]
    assert select(infl, "abs_mean", 0.5).points.tolist() == [0, 3]
    assert select(infl, "signed_mean", 0.5).points.tolist() == [2, 0]
    pt = select(infl, "per_test", 0.5)
    assert pt.pairs is not None and pt.pairs.tolist() == [[0, 3], [0, 0], [1, 0], [1, 3]]
    assert pt.points.tolist() == [0, 3] and pt.n_units == 4


def test_per_pair_and_per_point_flip_counts():
    before = torch.tensor([[3.0, -1.0, 0.5, -4.0], [-3.0, -0.9, 0.4, 1.0]], dtype=DT)
    after = torch.tensor([[-3.0, -1.0, 0.5, -4.0], [-3.0, 2.0, 0.4, -1.0]], dtype=DT)
    c = count_flips(before, after, select(before, "per_test", 0.5))
    # pairs (0,3) −4→−4, (0,0) 3→−3 flip (helpful), (1,0) −3→−3, (1,3) 1→−1 flip (helpful)
    assert (c.n_units, c.n_flipped, c.n_helpful, c.flipped_helpful, c.flipped_harmful) == (
        4,
        2,
        2,
        2,
        0,
    )
    c = count_flips(before, after, select(before, "abs_signed_mean", 0.5))
    # s before [0, −.95, .45, −1.5] → after [−3, .5, .45, −2.5]: point 1 flips (harmful)
    assert (c.n_units, c.n_flipped, c.n_helpful, c.flipped_helpful, c.flipped_harmful) == (
        2,
        1,
        0,
        0,
        1,
    )


@pytest.fixture(params=["relu", "attn"])
def binary(request):
    g = torch.Generator().manual_seed(2)
    x = torch.rand(50, 10, generator=g, dtype=DT)
    xt = torch.rand(12, 10, generator=g, dtype=DT)
    y, yt = torch.sign(x[:, 0] - 0.5), torch.sign(xt[:, 0] - 0.5)
    model = build_model(request.param, normalize_rows(x), 24, 1, sigma_w=1.0, seed=0, dtype=DT)
    return model, x, y, xt, yt


def test_grid_equals_separate_runs_and_defaults_are_the_objective(binary):
    model, x, y, xt, yt = binary
    protos = [
        (r, k)
        for r in ("objective", "lambda", 0.3)
        for k in ("abs_signed_mean", "abs_mean", "per_test")
    ]
    grid = flip_rates(model, x, y, xt, yt, protocols=protos, l2=1e-3, attack="fgsm", eps=0.2)
    for (r, k), res in zip(protos, grid):
        one = flip_rate(model, x, y, xt, yt, ridge=r, ranking=k, l2=1e-3, attack="fgsm", eps=0.2)
        assert (res.n_flipped, res.n_selected, res.n_helpful) == (
            one.n_flipped,
            one.n_selected,
            one.n_helpful,
        )
        np.testing.assert_allclose(res.score_after, one.score_after, rtol=1e-10, atol=1e-15)
        assert res.ranking == k
    assert (
        grid[0].ridge == pytest.approx(50 * 1e-3 / 2) and grid[0].ridge_label == "objective:0.025"
    )
    assert grid[3].ridge_label == "lambda:0.001" and grid[6].ridge_label == "0.3"
    d = flip_rate(model, x, y, xt, yt, attack="fgsm", eps=0.2)
    assert (d.ranking, d.ridge_label) == ("abs_signed_mean", "objective:0.025")
    assert grid[2].n_selected == 12 * 5  # per_test: 5 points for each of 12 test points
