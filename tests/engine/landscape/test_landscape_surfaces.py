"""Filter-normalised directions, batched surfaces vs naive loops, known quadratic curves."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from engine.errors import ConfigError
from engine.landscape import (
    Curve1D,
    curve_width,
    filter_normalized_direction,
    interpolate,
    interpolation_grid,
    surface_1d,
    surface_2d,
)
from engine.models import build_model
from engine.train import data_loss

F64 = torch.float64


def _data(n=20, d=6, classes=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g, dtype=F64)
    if classes is None:
        y = torch.sign(torch.randn(n, generator=g, dtype=F64))
    else:
        y = torch.randint(0, classes, (n,), generator=g)
    return x, y


def _naive_loss(model: nn.Module, params: dict[str, torch.Tensor], x, y) -> float:
    m = copy.deepcopy(model)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n in params:
                p.copy_(params[n])
        return float(data_loss(m(x), y))


def test_filter_norms_match_weight_rows() -> None:
    x, _ = _data()
    model = build_model("relu", x, 7, 3, sigma_w=0.5, train_output=True, dtype=F64)
    d = filter_normalized_direction(model, torch.Generator().manual_seed(1))
    assert set(d) == {"weight", "output"}
    for name in ("weight", "output"):
        p = dict(model.named_parameters())[name]
        assert d[name].shape == p.shape and d[name].dtype == F64
        torch.testing.assert_close(d[name].norm(dim=1), p.detach().norm(dim=1))
        assert not torch.allclose(d[name], p.detach())  # a random direction, not the weights
    again = filter_normalized_direction(model, torch.Generator().manual_seed(1))
    other = filter_normalized_direction(model, torch.Generator().manual_seed(2))
    assert torch.equal(again["weight"], d["weight"]) and not torch.equal(
        other["weight"], d["weight"]
    )
    # MLP-Attn: only the trainable first layer (C and the fixed ±1 head are buffers)
    attn = build_model("attn", x, 7, 1, dtype=F64)
    da = filter_normalized_direction(attn, torch.Generator().manual_seed(1))
    assert set(da) == {"mlp.weight"}
    torch.testing.assert_close(da["mlp.weight"].norm(dim=1), attn.mlp.weight.detach().norm(dim=1))


def test_one_dimensional_parameters() -> None:
    lin = nn.Linear(4, 2).double()
    d = filter_normalized_direction(lin, torch.Generator().manual_seed(0))
    assert torch.equal(d["bias"], torch.zeros(2, dtype=F64))  # Li et al.: biases not perturbed
    d2 = filter_normalized_direction(lin, torch.Generator().manual_seed(0), ignore_1d=False)
    assert abs(float(d2["bias"].norm() - lin.bias.detach().norm())) < 1e-12


def _least_squares():
    """nn.Linear fitted by an exact solve: the MSE loss is a convex quadratic with minimum θ*."""
    x, _ = _data(n=30, d=5, seed=4)
    w_true = torch.randn(5, generator=torch.Generator().manual_seed(9), dtype=F64)
    y = x @ w_true + 0.3 * torch.randn(30, generator=torch.Generator().manual_seed(8), dtype=F64)
    xa = torch.cat([x, torch.ones(30, 1, dtype=F64)], dim=1)
    sol = torch.linalg.lstsq(xa, y[:, None]).solution[:, 0]
    lin = nn.Linear(5, 1).double()
    with torch.no_grad():
        lin.weight.copy_(sol[:5][None])
        lin.bias.copy_(sol[5:])
    return lin, x, y, xa


def test_1d_curve_of_least_squares_is_the_known_parabola() -> None:
    lin, x, y, xa = _least_squares()
    d = filter_normalized_direction(lin, torch.Generator().manual_seed(3))
    c = surface_1d(lin, x, y, direction=d, points=41, span=1.0)
    assert int(c.losses.argmin()) == 20 and float(c.alphas[20]) == 0.0
    # L(θ* + αδ) = L(θ*) + α² δᵀ(XᵀX/n)δ: the gradient vanishes at an exact solution
    v = torch.cat([d["weight"].reshape(-1), d["bias"]])
    curv = float(v @ (xa.T @ xa / xa.shape[0]) @ v)
    expect = c.losses[20] + curv * c.alphas**2
    torch.testing.assert_close(c.losses, expect, atol=1e-10, rtol=1e-10)
    # the basin width at Δ is then 2√(Δ/curv) (interpolated between grid points)
    w = curve_width(c, 0.01)
    assert abs(w - 2 * math.sqrt(0.01 / curv)) < 0.02


def test_2d_surface_of_least_squares_is_the_known_quadratic_form() -> None:
    lin, x, y, xa = _least_squares()
    g = torch.Generator().manual_seed(5)
    dirs = (filter_normalized_direction(lin, g), filter_normalized_direction(lin, g))
    s = surface_2d(lin, x, y, directions=dirs, points=7, span=0.5, chunk=4)
    u, v = (torch.cat([d["weight"].reshape(-1), d["bias"]]) for d in dirs)
    h = xa.T @ xa / xa.shape[0]
    a, b = torch.meshgrid(s.alphas, s.betas, indexing="ij")
    expect = s.losses[3, 3] + a**2 * (u @ h @ u) + 2 * a * b * (u @ h @ v) + b**2 * (v @ h @ v)
    torch.testing.assert_close(s.losses, expect, atol=1e-10, rtol=1e-10)
    assert s.losses.shape == (7, 7) and int(s.losses.argmin()) == 3 * 7 + 3


@pytest.mark.parametrize(("kind", "classes"), [("relu", None), ("attn", 3)])
def test_batched_surfaces_equal_naive_loop(kind, classes) -> None:
    x, y = _data(classes=classes)
    n_out = 1 if classes is None else classes
    model = build_model(kind, x, 6, n_out, sigma_w=1.0, train_output=kind == "relu", dtype=F64)
    base = {n: p.detach().clone() for n, p in model.named_parameters()}
    g = torch.Generator().manual_seed(11)
    d1, d2 = filter_normalized_direction(model, g), filter_normalized_direction(model, g)
    s = surface_2d(model, x, y, directions=(d1, d2), points=5, span=0.8, chunk=7)
    for i, a in enumerate(s.alphas.tolist()):
        for j, b in enumerate(s.betas.tolist()):
            p = {n: base[n] + a * d1[n] + b * d2[n] for n in base}
            assert abs(float(s.losses[i, j]) - _naive_loss(model, p, x, y)) < 1e-12
    c = surface_1d(model, x, y, direction=d1, points=9, span=2.0, chunk=3)
    for a, v in zip(c.alphas.tolist(), c.losses.tolist()):
        assert abs(v - _naive_loss(model, {n: base[n] + a * d1[n] for n in base}, x, y)) < 1e-12
    # the model's own weights are untouched
    assert all(torch.equal(p.detach(), base[n]) for n, p in model.named_parameters())


def test_interpolation_endpoints_and_loop() -> None:
    x, y = _data(classes=3)
    model = build_model("relu", x, 6, 3, sigma_w=1.0, dtype=F64)
    init = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model.weight.add_(
            0.3
            * torch.randn(model.weight.shape, generator=torch.Generator().manual_seed(1), dtype=F64)
        )
    c = interpolate(model, init, x, y, points=11, extend=0.2, chunk=5)
    assert torch.allclose(c.alphas, interpolation_grid(11, 0.2))
    i0, i1 = int((c.alphas - 0).abs().argmin()), int((c.alphas - 1).abs().argmin())
    assert float(c.alphas[i0]) == 0.0 and float(c.alphas[i1]) == 1.0
    init_model = copy.deepcopy(model)
    init_model.load_state_dict(init)
    assert abs(float(c.losses[i0]) - float(data_loss(init_model(x), y).detach())) < 1e-12
    assert abs(float(c.losses[i1]) - float(data_loss(model(x), y).detach())) < 1e-12
    w0, w1 = init["weight"], model.weight.detach()
    for t, v in zip(c.alphas.tolist(), c.losses.tolist()):
        assert abs(v - _naive_loss(model, {"weight": (1 - t) * w0 + t * w1}, x, y)) < 1e-12
    with pytest.raises(ConfigError, match="init_state"):
        interpolate(model, {}, x, y)


def test_interpolation_grid_defaults() -> None:
    t = interpolation_grid()
    assert t.numel() == 61 and float(t[0]) == -0.25 and float(t[-1]) == 1.25
    assert {0.0, 1.0} <= set(t.tolist())


def test_curve_width_known_answers() -> None:
    a = torch.linspace(-1, 1, 2001, dtype=F64)
    for h in (0.5, 2.0, 8.0):
        c = Curve1D(a, 1.0 + 0.5 * h * a**2)
        assert abs(curve_width(c, 0.1) - 2 * math.sqrt(0.2 / h)) < 2e-3
        # the range-relative threshold is blind to the curvature of a quadratic
        assert abs(curve_width(c, 0.1, mode="range") - 2 * math.sqrt(0.1)) < 2e-3
    flat = Curve1D(a, torch.full_like(a, 0.3))
    assert curve_width(flat, 0.1) == 2.0  # never crosses: the whole grid (a lower bound)
    lop = Curve1D(a, torch.where(a < 0, 10 * a**2, a**2))
    assert abs(curve_width(lop, 0.1) - (math.sqrt(0.1) + math.sqrt(0.01))) < 2e-3
    with pytest.raises(ConfigError, match="mode"):
        curve_width(c, 0.1, mode="relative")


def test_bad_direction_and_grid() -> None:
    x, y = _data()
    model = build_model("relu", x, 4, 1, dtype=F64)
    with pytest.raises(ConfigError, match="direction"):
        surface_1d(model, x, y, direction={"nope": torch.zeros(3)})
    with pytest.raises(ConfigError, match="points"):
        surface_2d(model, x, y, points=1)
    with pytest.raises(ConfigError, match="chunk"):
        surface_1d(model, x, y, chunk=0)
