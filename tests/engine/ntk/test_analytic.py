"""Analytic Θ∞: known values, general-norm form, NNGP term, model wrapper, Monte Carlo."""

from __future__ import annotations

import math

import torch

from engine.models import MLPAttn, TwoLayerNet, normalize_rows
from engine.ntk import (
    analytic_ntk,
    analytic_ntk_for,
    analytic_ntk_general,
    analytic_ntk_with_output,
    empirical_ntk,
    kernel_distance,
    nngp_relu,
)

F64 = torch.float64


def _unit(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return normalize_rows(torch.randn(n, d, generator=g, dtype=F64))


def test_known_values() -> None:
    e1 = torch.tensor([[1.0, 0.0]], dtype=F64)
    pts = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.5, math.sqrt(3) / 2]], dtype=F64)
    k = analytic_ntk(e1, pts)[0]
    # θ = 0: 1/2; orthogonal: 0; antipodal: 0; cos = 1/2 (θ = π/3): (1/2)(2π/3)/(2π) = 1/6
    assert torch.allclose(k, torch.tensor([0.5, 0.0, 0.0, 1 / 6], dtype=F64), atol=1e-15)


def test_clamps_round_off() -> None:
    x = torch.tensor([[1.0 + 1e-12, 0.0], [-1.0 - 1e-12, 0.0]], dtype=F64)
    assert torch.isfinite(analytic_ntk(x)).all()
    assert torch.isfinite(analytic_ntk_general(torch.zeros(2, 3, dtype=F64))).all()


def test_general_form_matches_unit_and_scales() -> None:
    x, y = _unit(7, 5, 0), _unit(4, 5, 1)
    assert torch.allclose(analytic_ntk_general(x, y), analytic_ntk(x, y), atol=1e-15)
    al = torch.linspace(0.5, 3.0, 7, dtype=F64)
    be = torch.linspace(0.2, 2.0, 4, dtype=F64)
    scaled = analytic_ntk_general(x * al[:, None], y * be[:, None])
    assert torch.allclose(scaled, al[:, None] * be[None, :] * analytic_ntk(x, y), atol=1e-14)
    assert torch.allclose(analytic_ntk_general(x), analytic_ntk_general(x).T, atol=0)


def test_nngp_known_values_and_monte_carlo() -> None:
    x = torch.tensor([[2.0, 0.0]], dtype=F64)
    pts = torch.tensor([[3.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=F64)
    k = nngp_relu(x, pts, sigma_w=0.5)[0]
    # θ = 0: σ²‖x‖‖x'‖/2; θ = π/2: σ²‖x‖‖x'‖/(2π); θ = π: 0
    assert torch.allclose(k, torch.tensor([0.25 * 3.0, 0.25 * 2 / (2 * math.pi), 0.0], dtype=F64))
    xs = _unit(5, 4, 2) * torch.arange(1, 6, dtype=F64)[:, None]
    g = torch.Generator().manual_seed(3)
    w = 0.7 * torch.randn(400_000, 4, generator=g, dtype=F64)
    h = torch.relu(xs @ w.T)
    mc = h @ h.T / w.shape[0]
    assert kernel_distance(mc, nngp_relu(xs, sigma_w=0.7)) < 0.01
    ind = (xs @ w.T > 0).to(F64)
    mc0 = (xs @ xs.T) * (ind @ ind.T) / w.shape[0]
    assert kernel_distance(mc0, analytic_ntk_general(xs)) < 0.01


def test_analytic_ntk_for_models() -> None:
    g = torch.Generator().manual_seed(4)
    raw = torch.rand(6, 5, generator=g, dtype=F64) * 3
    relu = TwoLayerNet(5, 8, 1, seed=0, dtype=F64)
    assert torch.allclose(
        analytic_ntk_for(relu, raw), analytic_ntk(normalize_rows(raw)), atol=1e-15
    )
    attn = MLPAttn(torch.rand(10, 5, generator=g, dtype=F64), 8, 2, seed=0, dtype=F64)
    xt = attn.features(raw)
    assert torch.allclose(
        analytic_ntk_for(attn, raw, raw[:3]), analytic_ntk(xt, xt[:3]), atol=1e-15
    )
    both = TwoLayerNet(5, 8, 1, sigma_w=0.3, train_output=True, seed=0, dtype=F64)
    expect = analytic_ntk_with_output(normalize_rows(raw), sigma_w=0.3)
    assert torch.allclose(analytic_ntk_for(both, raw), expect, atol=1e-15)
    assert not torch.allclose(expect, analytic_ntk(normalize_rows(raw)))


def test_wide_trained_output_net_matches_analytic() -> None:
    x = torch.rand(12, 5, generator=torch.Generator().manual_seed(5), dtype=F64)
    net = TwoLayerNet(5, 2**14, 1, sigma_w=1.5, train_output=True, seed=2, dtype=F64)
    assert kernel_distance(empirical_ntk(net, x), analytic_ntk_for(net, x)) < 0.03


def test_differentiable_in_the_inputs() -> None:
    # the no-grad path works in place; with inputs that need grad it must stay autograd-safe
    x = (_unit(4, 3, 6) * 1.3).requires_grad_(True)
    y = _unit(3, 3, 7).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: analytic_ntk_general(a, b), (x, y))
    assert torch.autograd.gradcheck(lambda a, b: analytic_ntk(a, b), (x.detach() / 1.3, y))
