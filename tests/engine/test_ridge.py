"""The objective ridge: kernel ridge at nλ/2 is the minimiser of the linearized objective."""

from __future__ import annotations

import pytest
import torch

from engine.errors import ConfigError
from engine.models import TwoLayerNet
from engine.ridge import Ridge, check_ridge_rule, objective_ridge, resolve_ridge

DT = torch.float64


def test_objective_ridge_is_the_minimiser_of_mean_mse_plus_half_lambda_norm():
    # f(x) = J(x) θ; minimise (1/n)‖Jθ − y‖² + (λ/2)‖θ‖² directly in parameter space and
    # compare its test predictions with kernel ridge K_t (K + ρI)⁻¹ y at ρ = nλ/2
    g = torch.Generator().manual_seed(0)
    n, t, p, lam = 30, 7, 50, 0.05
    j, jt = torch.randn(n, p, generator=g, dtype=DT), torch.randn(t, p, generator=g, dtype=DT)
    y = torch.randn(n, generator=g, dtype=DT)
    theta = torch.linalg.solve((2 / n) * j.T @ j + lam * torch.eye(p, dtype=DT), (2 / n) * j.T @ y)
    rho = objective_ridge(n, lam)
    assert rho == pytest.approx(n * lam / 2)
    alpha = torch.linalg.solve(j @ j.T + rho * torch.eye(n, dtype=DT), y)
    torch.testing.assert_close(jt @ j.T @ alpha, jt @ theta, rtol=1e-10, atol=1e-12)
    # the bare λ gives a different (less regularised) predictor
    alpha_l = torch.linalg.solve(j @ j.T + lam * torch.eye(n, dtype=DT), y)
    assert float((jt @ j.T @ alpha_l - jt @ theta).abs().max()) > 1e-3


def test_two_layer_relu_is_exactly_its_own_linearization():
    # f(x; W) = ∇_W f(x; W) · W (degree-1 homogeneity), so f_lin(θ) = J θ with no offset
    net = TwoLayerNet(5, 16, sigma_w=1.0, seed=3, dtype=DT)
    x = torch.rand(9, 5, dtype=DT)
    out = net(x)[:, 0]
    grads = torch.stack(
        [torch.autograd.grad(net(x[i : i + 1]).sum(), net.weight)[0] for i in range(9)]
    )
    torch.testing.assert_close((grads * net.weight.detach()).sum((1, 2)), out.detach())


def test_resolve_rules_and_labels():
    assert resolve_ridge("objective", n=1000, lam=1e-3) == Ridge(0.5, "objective")
    assert resolve_ridge("objective", n=1000, lam=1e-3).label == "objective:0.5"
    assert resolve_ridge("lambda", n=1000, lam=1e-3).label == "lambda:0.001"
    assert resolve_ridge(0.25, n=1000, lam=1e-3).label == "0.25"
    assert resolve_ridge("0.25", n=10, lam=0.0).value == 0.25
    assert resolve_ridge("objective", n=200, lam=1e-3, loss="ce").value == pytest.approx(0.1)
    assert check_ridge_rule(" Objective ", "f") == "objective"


@pytest.mark.parametrize("bad", ["nope", -1.0, 0, float("nan"), True, None])
def test_bad_ridge_rules_name_the_field(bad):
    with pytest.raises(ConfigError, match="flip.ridge"):
        check_ridge_rule(bad, "flip.ridge")


def test_zero_l2_needs_a_number():
    with pytest.raises(ConfigError, match="flip.ridge"):
        resolve_ridge("objective", n=100, lam=0.0, field="flip.ridge")
    with pytest.raises(ConfigError, match="loss"):
        objective_ridge(10, 1e-3, "hinge")


def test_nlambda_is_n_times_lambda_and_labelled():
    from engine.ridge import resolve_ridge

    r = resolve_ridge("nlambda", n=200, lam=1e-3)
    assert r.value == pytest.approx(0.2) and r.label == "nlambda:0.2"
    assert resolve_ridge("objective", n=200, lam=1e-3).value == pytest.approx(r.value / 2)
