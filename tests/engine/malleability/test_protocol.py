"""Flip-rate protocol: invariants, known answers and the no-mutation guarantee (float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.errors import ConfigError
from engine.influence import ntk_loo_influence
from engine.malleability import flip_rate, scalar_kernel
from engine.models import build_model, normalize_rows

DT = torch.float64


def identity_attack(model, x, y, *, eps):
    return x.clone()


def noise_attack(model, x, y, *, eps):
    """A deterministic stand-in perturbation: ±eps by a fixed pattern, kept in [0, 1]."""
    g = torch.Generator().manual_seed(123)
    s = torch.randint(0, 2, x.shape, generator=g).to(x.dtype) * 2 - 1
    return (x + eps * s).clamp(0, 1)


@pytest.fixture(params=["relu", "attn"])
def setup(request):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(40, 12, generator=g, dtype=DT)
    xt = torch.rand(8, 12, generator=g, dtype=DT)
    labels = torch.randint(0, 3, (40,), generator=g)
    labels_t = torch.randint(0, 3, (8,), generator=g)
    model = build_model(request.param, normalize_rows(x), 32, 3, sigma_w=1.0, seed=1, dtype=DT)
    return model, x, labels, xt, labels_t


@pytest.mark.parametrize("intervention", ["transformed", "adversarial"])
def test_zero_perturbation_gives_zero_flips(setup, intervention):
    model, x, y, xt, yt = setup
    r = flip_rate(model, x, y, xt, yt, attack=identity_attack, eps=0.3, intervention=intervention)
    assert r.n_selected == 4 and r.n_flipped == 0 and r.flip_rate == 0.0
    assert r.spearman == pytest.approx(1.0) and r.topk_overlap == 1.0
    assert r.ci_low == 0.0 < r.ci_high < 1.0
    np.testing.assert_allclose(r.score_after, r.score_before, rtol=1e-12, atol=0)


@pytest.mark.parametrize("attack", ["fgsm", "pgd", "mim"])
def test_tiny_eps_real_attack_gives_zero_flips(setup, attack):
    model, x, y, xt, yt = setup
    opts = {"pgd": {"steps": 3, "alpha": 1e-10}, "mim": {"steps": 3}, "fgsm": {}}[attack]
    r = flip_rate(model, x, y, xt, yt, attack=attack, eps=1e-9, attack_opts=opts)
    assert r.flip_rate == 0.0
    assert r.spearman > 0.999


def test_protocol_never_mutates_the_model(setup):
    model, x, y, xt, yt = setup
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    r = flip_rate(
        model,
        x,
        y,
        xt,
        yt,
        attack="pgd",
        eps=0.3,
        intervention="adversarial",
        attack_opts={"steps": 3},
    )
    assert model.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
    for p in model.parameters():
        assert p.grad is None
    assert 0.0 <= r.flip_rate <= 1.0


@pytest.mark.parametrize("ranking", ["abs_signed_mean", "abs_mean"])
def test_selection_and_scores_match_a_manual_computation(setup, ranking):
    # transformed with a deterministic stand-in attack, recomputed by hand: the influences
    # before, the top-10% by the ranking, the new training set (C recomputed for MLP-Attn)
    model, x, y, xt, yt = setup
    r = flip_rate(model, x, y, xt, yt, attack=noise_attack, eps=0.2, ridge=1e-2, ranking=ranking)
    k = scalar_kernel(model, x)
    i0 = ntk_loo_influence(0.5 * (k + k.T), scalar_kernel(model, xt, x), y, yt, 1e-2, n_classes=3)
    score = i0.mean(0).abs() if ranking == "abs_signed_mean" else i0.abs().mean(0)
    np.testing.assert_allclose(r.influence_before, score.numpy(), rtol=1e-10)
    top = torch.argsort(score, descending=True)[:4]
    assert sorted(r.selected.tolist()) == sorted(top.tolist())
    x_new = x.clone()
    idx = np.sort(r.selected)  # the protocol attacks the selected points in index order
    x_new[idx] = noise_attack(None, x[idx], None, eps=0.2)
    after = model if not hasattr(model, "set_context") else rebuild_context(model, x_new)
    k1 = scalar_kernel(after, x_new)
    i1 = ntk_loo_influence(
        0.5 * (k1 + k1.T), scalar_kernel(after, xt, x_new), y, yt, 1e-2, n_classes=3
    )
    np.testing.assert_allclose(r.score_after, i1.mean(0).numpy(), rtol=1e-9, atol=1e-14)
    flips = np.sign(r.score_after[r.selected]) != np.sign(r.score_before[r.selected])
    assert r.n_flipped == int(flips.sum()) and r.flip_rate == pytest.approx(flips.mean())
    helpful = r.score_before[r.selected] > 0
    assert r.n_helpful == int(helpful.sum())
    assert r.flipped_helpful == int((flips & helpful).sum())
    assert r.flipped_helpful + r.flipped_harmful == r.n_flipped
    assert r.ridge == 1e-2 and r.ridge_label == "0.01" and r.ranking == ranking
    assert r.ci_low <= r.flip_rate <= r.ci_high


def rebuild_context(model, x_new):
    import copy

    m = copy.deepcopy(model)
    m.set_context(normalize_rows(x_new))
    return m


def test_curated_removes_points_and_reports_nan_rate(setup):
    model, x, y, xt, yt = setup
    r = flip_rate(model, x, y, xt, yt, intervention="curated", ranking="signed_mean", ridge=1e-2)
    assert math.isnan(r.flip_rate) and math.isnan(r.ci_low)
    assert np.isnan(r.influence_after[r.selected]).all()
    keep = np.setdiff1d(np.arange(40), r.selected)
    assert np.isfinite(r.influence_after[keep]).all()
    # signed_mean: the selected points are the largest mean influences
    assert r.influence_before[r.selected].min() >= np.delete(r.influence_before, r.selected).max()
    if not hasattr(model, "set_context"):  # 2L-ReLU: the kernel of the rest is a sub-matrix
        kk = torch.as_tensor(keep)
        k = scalar_kernel(model, x)[kk][:, kk]
        i1 = ntk_loo_influence(
            0.5 * (k + k.T), scalar_kernel(model, xt, x)[:, kk], y[kk], yt, 1e-2, n_classes=3
        )
        np.testing.assert_allclose(r.influence_after[keep], i1.mean(0).numpy(), rtol=1e-9)
    assert -1.0 <= r.spearman <= 1.0 and 0.0 <= r.topk_overlap <= 1.0


def test_deterministic_given_the_seed():
    g = torch.Generator().manual_seed(5)
    x = torch.rand(30, 10, generator=g, dtype=DT)
    xt = torch.rand(6, 10, generator=g, dtype=DT)
    y = torch.sign(x[:, 0] - 0.5)
    yt = torch.sign(xt[:, 0] - 0.5)
    model = build_model("attn", normalize_rows(x), 16, 1, sigma_w=1.0, seed=0, dtype=DT)
    kw = dict(attack="pgd", eps=0.3, attack_opts={"steps": 2, "alpha": 0.1})
    a = flip_rate(model, x, y, xt, yt, seed=7, **kw)
    b = flip_rate(model, x, y, xt, yt, seed=7, **kw)
    c = flip_rate(model, x, y, xt, yt, seed=8, **kw)
    assert a.n_selected == 3
    np.testing.assert_array_equal(a.selected, b.selected)
    np.testing.assert_array_equal(a.score_after, b.score_after)
    np.testing.assert_array_equal(a.selected, c.selected)  # selection ignores the attack seed
    assert not np.array_equal(a.score_after, c.score_after)  # the random start uses it


def test_bad_options_raise(setup):
    model, x, y, xt, yt = setup
    with pytest.raises(ConfigError, match="flip.retrain"):
        flip_rate(model, x, y, xt, yt, retrain=True)
    with pytest.raises(ConfigError):
        flip_rate(model, x, y, xt, yt, ranking="max")
    with pytest.raises(ConfigError):
        flip_rate(model, x, y, xt, yt, intervention="poison")
    with pytest.raises(ConfigError):
        flip_rate(model, x, y, xt, yt, top_frac=0.0)
    with pytest.raises(ConfigError):
        flip_rate(model, x)


def test_flip_options_are_checked_once_and_not_mixed_with_keywords() -> None:
    """FlipOptions holds the protocol's options and checks them (the run spec's flip
    section calls the same check_flip); options and keywords together are refused."""
    from engine.malleability import FlipOptions, flip_rates
    from engine.run.spec import FlipSpec

    for bad in ({"top_frac": 2.0}, {"intervention": "nope"}, {"retrain": True}, {"protocols": ()}):
        with pytest.raises(ConfigError):
            FlipOptions(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="flip.top_frac"):
        FlipSpec(top_frac=0.0)
    x = torch.rand(8, 4, dtype=torch.float64)
    with pytest.raises(ConfigError, match="options or keywords"):
        flip_rates(
            torch.nn.Linear(4, 1), x, torch.ones(8), x, torch.ones(8), FlipOptions(), eps=0.1
        )
