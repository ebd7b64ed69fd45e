"""Gradient influence: exact vs CG vs LiSSA, and against actual retraining."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from engine.errors import ConfigError
from engine.influence import conjugate_gradient, gradient_influence
from engine.influence.losses import encode_targets, pointwise_loss
from engine.models import TwoLayerNet

DT = torch.float64


@pytest.fixture
def data():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(24, 5, generator=g, dtype=DT)
    xt = torch.rand(6, 5, generator=g, dtype=DT)
    return x, xt, g


def test_exact_equals_cg_binary_mse(data):
    x, xt, _ = data
    net = TwoLayerNet(5, 8, sigma_w=1.0, seed=2, dtype=DT)
    y = torch.sign(x[:, 0] - 0.5)
    yt = torch.sign(xt[:, 0] - 0.5)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    ex = gradient_influence(net, x, y, xt, yt, lam=1e-2, method="exact")
    cg = gradient_influence(net, x, y, xt, yt, lam=1e-2, method="cg", cg_tol=1e-13)
    assert ex.shape == (6, 24) and ex.abs().max() > 1e-6
    torch.testing.assert_close(cg, ex, atol=1e-6 * float(ex.abs().max()), rtol=1e-6)
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k])


@pytest.mark.parametrize("method", ["exact", "cg"])
def test_train_indices_solve_for_the_training_side_and_give_the_same_columns(data, method):
    x, xt, _ = data
    net = TwoLayerNet(5, 8, sigma_w=1.0, seed=2, dtype=DT)
    y, yt = torch.sign(x[:, 0] - 0.5), torch.sign(xt[:, 0] - 0.5)
    full = gradient_influence(net, x, y, xt, yt, lam=1e-2, method=method, cg_tol=1e-13)
    idx = [3, 0, 17]
    part = gradient_influence(
        net, x, y, xt, yt, lam=1e-2, method=method, cg_tol=1e-13, train_indices=idx
    )
    assert part.shape == (6, 3)
    torch.testing.assert_close(part, full[:, idx], atol=1e-8 * float(full.abs().max()), rtol=1e-6)


def test_exact_equals_cg_and_lissa_multiclass_ce(data):
    x, xt, g = data
    net = TwoLayerNet(5, 6, n_out=3, sigma_w=1.0, train_output=True, seed=4, dtype=DT)
    y = torch.randint(0, 3, (24,), generator=g)
    yt = torch.randint(0, 3, (6,), generator=g)
    kw = dict(lam=0.2, loss="ce")
    ex = gradient_influence(net, x, y, xt, yt, method="exact", **kw)
    cg = gradient_influence(net, x, y, xt, yt, method="cg", cg_tol=1e-13, **kw)
    li = gradient_influence(net, x, y, xt, yt, method="lissa", lissa_depth=250, **kw)
    scale = float(ex.abs().max())
    torch.testing.assert_close(cg, ex, atol=1e-6 * scale, rtol=1e-6)
    torch.testing.assert_close(li, ex, atol=1e-3 * scale, rtol=1e-2)
    # stochastic LiSSA on mini-batches is only loosely right
    ls = gradient_influence(
        net,
        x,
        y,
        xt,
        yt,
        method="lissa",
        lissa_depth=150,
        lissa_batch=12,
        generator=torch.Generator().manual_seed(0),
        **kw,
    )
    assert torch.corrcoef(torch.stack([ls.flatten(), ex.flatten()]))[0, 1] > 0.9


def test_conjugate_gradient_solves_spd_system():
    g = torch.Generator().manual_seed(1)
    m = torch.randn(10, 10, generator=g, dtype=DT)
    a = m @ m.T + 0.1 * torch.eye(10, dtype=DT)
    b = torch.randn(3, 10, generator=g, dtype=DT)
    x, it = conjugate_gradient(lambda v: v @ a, b, tol=1e-12, maxiter=200)
    torch.testing.assert_close(x, torch.linalg.solve(a, b.T).T, atol=1e-9, rtol=1e-9)
    assert it <= 200


def _fit(model: nn.Module, x, t, weights, lam, loss) -> None:
    """Minimise (1/n) Σ_j w_j ℓ_j + (λ/2)‖θ‖² with LBFGS (full batch)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.LBFGS(
        params,
        lr=1,
        max_iter=500,
        tolerance_grad=1e-13,
        tolerance_change=1e-15,
        history_size=50,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        r = (weights * pointwise_loss(model(x), t, loss)).sum() / x.shape[0]
        r = r + 0.5 * lam * sum((p * p).sum() for p in params)
        r.backward()
        return r

    opt.step(closure)


@pytest.mark.parametrize("loss", ["ce", "mse"])
def test_gradient_influence_predicts_retraining(loss):
    # convex models (logistic / linear regression): removing point i, i.e. dropping its term
    # from (1/n)Σ_j ℓ_j with the 1/n kept (ε = −1/n), and refitting must change the test
    # loss by ≈ the influence (first order in 1/n).
    g = torch.Generator().manual_seed(0)
    n = 80  # first-order accuracy needs small leverages (≈ P/n); at n = 24 the error is ~30%
    x, xt = torch.rand(n, 5, generator=g, dtype=DT), torch.rand(6, 5, generator=g, dtype=DT)
    labels = (x[:, 0] + 0.3 * torch.randn(n, generator=g, dtype=DT) > 0.5).long()
    labels_t = (xt[:, 0] > 0.5).long()
    lam = 1e-2
    torch.manual_seed(0)  # nn.Linear's init; the fit goes to the unique optimum anyway
    model = nn.Linear(5, 2, dtype=DT)
    t, tt = encode_targets(labels, 2), encode_targets(labels_t, 2)
    _fit(model, x, t, torch.ones(n, dtype=DT), lam, loss)
    infl = gradient_influence(model, x, labels, xt, labels_t, lam=lam, loss=loss)
    base = pointwise_loss(model(xt), tt, loss).detach()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    truth = torch.empty_like(infl)
    for i in range(n):
        model.load_state_dict(state)
        w = torch.ones(n, dtype=DT)
        w[i] = 0
        _fit(model, x, t, w, lam, loss)
        truth[:, i] = pointwise_loss(model(xt), tt, loss).detach() - base
    corr = torch.corrcoef(torch.stack([infl.flatten(), truth.flatten()]))[0, 1]
    assert corr > 0.995
    assert (torch.sign(infl) == torch.sign(truth))[truth.abs() > 0.05 * truth.abs().max()].all()
    torch.testing.assert_close(infl, truth, atol=0.15 * float(truth.abs().max()), rtol=0.0)


def test_bad_options_raise(data):
    x, xt, _ = data
    net = TwoLayerNet(5, 4, dtype=DT)
    y = torch.ones(24, dtype=DT)
    with pytest.raises(ConfigError):
        gradient_influence(net, x, y, xt, y[:6], lam=1e-2, method="newton")
    with pytest.raises(ConfigError):
        gradient_influence(net, x, y, xt, y[:6], lam=0.0)


@pytest.mark.parametrize(("loss", "k_out"), [("mse", 1), ("ce", 2), ("ce", 1)])
def test_gauss_newton_exact_equals_the_dense_hessian(data, loss, k_out):
    """A ReLU layer under fixed output weights has ∇²f = 0 a.e., so H = Gauss–Newton + λI
    and the push-through solve on the [nK, nK] kernel is the dense [P, P] solve to
    round-off, for every column and for chosen training columns."""
    x, xt, _ = data
    if k_out == 2:
        y, yt = (x[:, 0] > 0.5).long(), (xt[:, 0] > 0.5).long()
    else:
        y, yt = torch.sign(x[:, 0] - 0.5), torch.sign(xt[:, 0] - 0.5)
    net = TwoLayerNet(5, 8, n_out=k_out, sigma_w=1.0, seed=2, dtype=DT)
    dense = gradient_influence(net, x, y, xt, yt, lam=0.03, loss=loss, method="exact")
    gn = gradient_influence(
        net, x, y, xt, yt, lam=0.03, loss=loss, method="exact", gauss_newton=True
    )
    cols = gradient_influence(
        net, x, y, xt, yt, lam=0.03, loss=loss, method="exact", gauss_newton=True,
        train_indices=[3, 0, 7],
    )  # fmt: skip
    scale = float(dense.abs().max())
    assert scale > 1e-4
    torch.testing.assert_close(gn, dense, rtol=0, atol=1e-12 * scale)
    torch.testing.assert_close(cols, dense[:, [3, 0, 7]], rtol=0, atol=1e-12 * scale)
    # a model with ∇²f ≠ 0 (a trained output layer) is where the two differ: the flag is
    # the caller's claim, not a check
    net2 = TwoLayerNet(5, 8, sigma_w=1.0, train_output=True, seed=2, dtype=DT)
    if k_out == 1 and loss == "mse":
        a = gradient_influence(net2, x, y, xt, yt, lam=0.03, method="exact")
        b = gradient_influence(net2, x, y, xt, yt, lam=0.03, method="exact", gauss_newton=True)
        assert float((a - b).abs().max()) > 1e-6 * float(a.abs().max())
