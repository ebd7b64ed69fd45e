"""PBRF ground truth: closed form for a linear model, the influence-function limit, and two
independent optimisers agreeing on a network (float64)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from engine.errors import ConfigError
from engine.influence import gradient_influence
from engine.influence.pbrf import pbrf_effects
from engine.models import TwoLayerNet

DT = torch.float64


class _Linear(nn.Module):
    """f(x) = x W (linear in its parameters, K outputs)."""

    def __init__(self, d: int, k: int, seed: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.w = nn.Parameter(torch.randn(d, k, generator=g, dtype=DT))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w


@pytest.fixture
def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, 6, generator=g, dtype=DT)
    xt = torch.randn(7, 6, generator=g, dtype=DT)
    y = torch.sign(x[:, 0] + 0.3 * torch.randn(30, generator=g, dtype=DT))
    yt = torch.sign(xt[:, 0])
    return x, y, xt, yt


def test_linear_mse_pbrf_has_the_closed_form(data):
    """f = x w, ℓ = (f − y)²: the PBRF objective is quadratic, its minimiser is
    w* + (H − (2/n) x_i x_iᵀ)⁻¹ ∇ℓ_i / n with H = (2/n) XᵀX + λI the Gauss–Newton Hessian
    plus damping, at ANY w* (not only the minimiser): the exact leave-one-out of the
    damped problem, whose first order in 1/n is Koh–Liang's H⁻¹∇ℓ_i / n."""
    x, y, xt, yt = data
    n, lam = x.shape[0], 0.05
    model = _Linear(6, 1, seed=3)  # an arbitrary θ*, far from the minimiser
    w = model.w.detach()[:, 0]
    h = 2.0 / n * x.T @ x + lam * torch.eye(6, dtype=DT)
    idx = [0, 4, 11, 29]
    want = []
    for i in idx:
        gi = 2.0 * (x[i] @ w - y[i]) * x[i]
        dw = torch.linalg.solve(h - 2.0 / n * torch.outer(x[i], x[i]), gi / n)
        want.append(((xt @ (w + dw) - yt) ** 2) - ((xt @ w - yt) ** 2))
    want_t = torch.stack(want, 1)
    for solver in ("lbfgs", "newton"):
        res = pbrf_effects(model, x, y, xt, yt, idx, lam=lam, solver=solver, tol=1e-10)
        assert res.converged, (solver, res.grad_norm)
        torch.testing.assert_close(res.effects, want_t, rtol=1e-8, atol=1e-12)
    assert want_t.abs().max() > 1e-4  # a real effect, not zeros on both sides


@pytest.mark.parametrize("loss", ["mse", "ce"])
def test_pbrf_tends_to_the_damped_influence_function_as_epsilon_shrinks(data, loss):
    """Δ(ε)/(nε) → (1/n)∇ℓ_tᵀH⁻¹∇ℓ_i (gradient_influence, exact) for ε → 0, with an O(ε)
    error: the PBRF's damping is the estimators' λ (a ReLU net with fixed outputs, whose
    Hessian is Gauss–Newton a.e., so the two Hessians coincide)."""
    x, y, xt, yt = data
    if loss == "ce":
        y, yt = (y > 0).long(), (yt > 0).long()
        net = TwoLayerNet(6, 10, n_out=2, sigma_w=1.0, seed=1, dtype=DT)
    else:
        net = TwoLayerNet(6, 10, sigma_w=1.0, seed=1, dtype=DT)
    n, lam, idx = x.shape[0], 0.05, [1, 5, 8]
    infl = gradient_influence(net, x, y, xt, yt, lam=lam, loss=loss, train_indices=idx)
    errs = []
    for eps in (1e-4, 1e-5):
        res = pbrf_effects(
            net, x, y, xt, yt, idx, lam=lam, loss=loss, solver="newton", tol=1e-9, epsilon=eps
        )
        assert res.converged
        errs.append(float((res.effects / (n * eps) - infl).abs().max()))
    scale = float(infl.abs().max())
    assert scale > 1e-4
    assert errs[1] < 2e-4 * scale  # agrees to first order …
    assert errs[1] < errs[0] / 5  # … and the error shrinks with ε (O(ε), not a fixed bias)


class _Tanh(nn.Module):
    """A smooth two-layer net (the PBRF of a ReLU net may sit on a kink, where no gradient
    vanishes; a smooth one has a stationary point to converge to)."""

    def __init__(self, d: int, m: int, k: int, seed: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.w = nn.Parameter(torch.randn(m, d, generator=g, dtype=DT) / d**0.5)
        self.a = nn.Parameter(torch.randn(k, m, generator=g, dtype=DT) / m**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.w.T) @ self.a.T


@pytest.mark.parametrize("loss", ["mse", "ce"])
def test_two_optimisers_agree_on_a_network(data, loss):
    """L-BFGS and Newton–CG minimise the same objective to the same effects; the PBRF
    moves the weights (the removed point's own loss rises), and θ* is left untouched."""
    x, y, xt, yt = data
    if loss == "ce":
        y, yt = (y > 0).long(), (yt > 0).long()
    net = _Tanh(6, 12, 2 if loss == "ce" else 1, seed=4)
    before = net.w.detach().clone()
    idx = list(range(0, 30, 3))
    a = pbrf_effects(net, x, y, xt, yt, idx, lam=0.3, loss=loss, solver="lbfgs", tol=1e-9)
    b = pbrf_effects(net, x, y, xt, yt, idx, lam=0.3, loss=loss, solver="newton", tol=1e-9)
    assert a.converged and b.converged, (a.grad_norm, b.grad_norm)
    scale = float(a.effects.abs().max())
    assert scale > 1e-3
    torch.testing.assert_close(a.effects, b.effects, rtol=1e-6, atol=1e-7 * scale)
    assert torch.equal(net.w, before)
    # the removed point's own effect: its loss rises when it is down-weighted
    own = pbrf_effects(net, x, y, x[idx], y[idx], idx, lam=0.3, loss=loss, tol=1e-9)
    assert bool((own.effects.diagonal() > 0).all())


def test_bad_settings_are_refused(data):
    x, y, xt, yt = data
    net = TwoLayerNet(6, 4, seed=0, dtype=DT)
    with pytest.raises(ConfigError, match="solver"):
        pbrf_effects(net, x, y, xt, yt, [0], lam=0.1, solver="adam", tol=1e-6)
    with pytest.raises(ConfigError, match="lam"):
        pbrf_effects(net, x, y, xt, yt, [0], lam=0.0, tol=1e-6)
    with pytest.raises(ConfigError, match="indices"):
        pbrf_effects(net, x, y, xt, yt, [30], lam=0.1, tol=1e-6)


@pytest.mark.parametrize("solver", ["lbfgs", "newton"])
def test_a_checkpoint_is_the_shorter_solve_exactly(data, solver):
    """``checkpoint`` k of a longer solve gives what ``max_steps = k`` gives, bit for bit
    (the noise floor's two step budgets from one solve), and it is not the final answer."""
    x, y, xt, yt = data
    net = _Tanh(6, 12, 1, seed=4)
    idx = list(range(0, 30, 3))
    kw = dict(lam=0.3, solver=solver, tol=1e-12)
    short = pbrf_effects(net, x, y, xt, yt, idx, max_steps=3, **kw)
    both = pbrf_effects(net, x, y, xt, yt, idx, max_steps=6, checkpoint=3, **kw)
    alone = pbrf_effects(net, x, y, xt, yt, idx, max_steps=6, **kw)
    assert both.early is not None and both.early.steps == short.steps == 3
    assert torch.equal(both.early.effects, short.effects)
    assert torch.equal(both.early.grad_norm, short.grad_norm)
    assert torch.equal(both.effects, alone.effects) and both.steps == alone.steps
    assert not torch.equal(both.effects, short.effects)  # three more steps moved it
    # a solve that stops before its checkpoint: the shorter solve is the same one
    done = pbrf_effects(
        net, x, y, xt, yt, idx, max_steps=500, checkpoint=400, **{**kw, "tol": 1e-6}
    )
    assert done.converged and done.steps < 400 and done.early is not None
    assert torch.equal(done.early.effects, done.effects)
    with pytest.raises(ConfigError, match="checkpoint"):
        pbrf_effects(net, x, y, xt, yt, idx, max_steps=3, checkpoint=3, **kw)


def test_the_span_reduction_is_the_full_pbrf():
    """``span_problem`` (``pbrf_truth``'s parametrisation) solves in W* + B Qᵀ (Q a basis
    of the training features, n < d here) what ``pbrf_effects`` solves in the full first
    layer: Q orthonormal, so the two give the same objective, gradients and L-BFGS
    iterates, and the same effects after any number of steps, converged or not (a ReLU
    PBRF need not be); ``pbrf_truth`` then polishes those steps at the kinks to a
    converged point (engine.influence.pbrf_relu)."""
    from engine.data import load_dataset
    from engine.malleability.check import float64_copy, pbrf_truth, span_problem

    ds = load_dataset("digits", classes=(3, 8), n_train=30, n_test=10, seed=0)
    assert ds.x_train.shape[0] < ds.x_train.shape[1]  # the span is a real reduction
    net = TwoLayerNet(ds.x_train.shape[1], 16, sigma_w=1.0, seed=2, dtype=DT)
    idx, lam = [0, 7, 19], 0.01
    m64 = float64_copy(net, ds, transductive=False)
    head, inp, inp_t = span_problem(m64, ds.x_train_raw.to(DT), ds.x_test_raw.to(DT))
    assert head is not m64  # the span head
    span = pbrf_effects(
        head, inp, ds.y_train, inp_t, ds.y_test, idx, lam=lam, max_steps=6, tol=1e-12
    )
    full = pbrf_effects(
        m64, ds.x_train_raw, ds.y_train, ds.x_test_raw, ds.y_test, idx,
        lam=lam, max_steps=6, tol=1e-12,
    )  # fmt: skip
    assert span.steps == full.steps == 6
    assert not span.converged
    scale = float(full.effects.abs().max())
    assert scale > 1e-6
    torch.testing.assert_close(span.effects, full.effects, rtol=1e-7, atol=1e-9 * scale)
    truth, _ = pbrf_truth(
        net, ds, idx, l2=lam, transductive=False, solver="lbfgs", max_steps=6, tol=1e-9
    )
    assert truth.converged, truth.grad_norm


@pytest.mark.parametrize("kind", ["relu", "attn"])
def test_gradient_estimates_in_the_span_are_the_full_first_layers(kind):
    """``gradient_estimates`` solves in the span of the training features (and ``exact``
    by the Gauss–Newton kernel solve, past the dense cap): the same influence as CG and
    the dense Hessian on the full first layer, the old path (CG to its 1e-8 tolerance)."""
    from engine.data import load_dataset
    from engine.malleability.check import gradient_estimates
    from engine.models import build_model

    ds = load_dataset("digits", classes=(3, 8), n_train=30, n_test=10, seed=0)
    assert ds.x_train.shape[0] < ds.x_train.shape[1]  # the span is a real reduction
    net = build_model(kind, ds.x_train_raw.to(DT), 16, seed=2, dtype=DT, sigma_w=1.0)
    idx = [0, 7, 19, 25]
    kw = dict(methods=("exact", "cg"), l2=0.01, exact_max_params=4096, transductive=False)
    span, _, _, notes = gradient_estimates(net, ds, idx, span=True, **kw)
    full, _, _, _ = gradient_estimates(net, ds, idx, span=False, **kw)
    assert not notes and set(span) == set(full) == {
        ("gradient_exact", "lambda"),
        ("gradient_cg", "lambda"),
    }
    ref = full[("gradient_exact", "lambda")]  # the dense [P, P] Hessian, P = 16 · 64
    scale = float(ref.abs().max())
    assert scale > 1e-6
    for key, est in [*span.items(), *full.items()]:
        torch.testing.assert_close(est, ref, rtol=0, atol=1e-7 * scale, msg=str(key))
    # past the dense cap only the kernel solve runs exact
    capped, _, _, notes = gradient_estimates(
        net, ds, idx, span=False, **{**kw, "exact_max_params": 100}
    )
    assert ("gradient_exact", "lambda") not in capped and "skipped" in notes[0]
    capped, _, _, notes = gradient_estimates(
        net, ds, idx, span=True, **{**kw, "exact_max_params": 100}
    )
    assert ("gradient_exact", "lambda") in capped and not notes
