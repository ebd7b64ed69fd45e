"""The retraining ground truth of ``influence_check``: the harness against exact answers."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from engine.errors import ConfigError
from engine.influence import ntk_loo_influence
from engine.influence.retrain import agreement, retraining_effects, run_to_end
from engine.ridge import objective_ridge
from engine.run.spec import TrainSpec
from engine.train import train

DT = torch.float64


def _problem(n: int = 24, t: int = 9, p: int = 40, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, p, generator=g, dtype=DT) / p**0.5
    xt = torch.randn(t, p, generator=g, dtype=DT) / p**0.5
    w = torch.randn(p, generator=g, dtype=DT)
    y = torch.sign(x @ w + 0.3 * torch.randn(n, generator=g, dtype=DT))
    yt = torch.sign(xt @ w)
    return x, y, xt, yt


def _ridge_fit(x, y, xt, yt, rho):
    """fit(exclude) for kernel ridge with the linear kernel: refit without the point."""

    def fit(exclude):
        keep = torch.ones(x.shape[0], dtype=torch.bool)
        if exclude is not None:
            keep[exclude] = False
        k = x[keep] @ x[keep].T
        alpha = torch.linalg.solve(k + rho * torch.eye(int(keep.sum()), dtype=DT), y[keep])
        return (xt @ x[keep].T @ alpha - yt) ** 2

    return fit


def test_harness_equals_kernel_loo_for_a_kernel_ridge_model():
    x, y, xt, yt = _problem()
    rho = 0.3
    idx = [0, 5, 11, 17, 23]
    truth = run_to_end(retraining_effects(_ridge_fit(x, y, xt, yt, rho), idx))
    loo = ntk_loo_influence(x @ x.T, xt @ x.T, y, yt, rho)
    assert truth.shape == (9, 5)
    assert torch.allclose(truth, loo[:, idx], atol=1e-10, rtol=0)
    a = agreement(loo[:, idx], truth)
    assert a.spearman == pytest.approx(1.0) and a.sign_agreement == 1.0 and a.n_points == 5
    # a wrong estimator does not agree: the same formula at a ridge 30× off
    wrong = ntk_loo_influence(x @ x.T, xt @ x.T, y, yt, rho * 30)[:, idx]
    assert not torch.allclose(wrong, truth, atol=1e-4)


class _Linear(nn.Module):
    def __init__(self, p: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(p, 1, dtype=DT))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w


def _gd_fit(x, y, xt, yt, lam, epochs=4000):
    lr = 1.0 / (2 * float(torch.linalg.eigvalsh(x.T @ x).max()) / x.shape[0] + lam)
    cfg = TrainSpec(optimizer="gd", lr=lr, epochs=epochs, l2=lam)

    def fit(exclude):
        model = _Linear(x.shape[1])
        for _ in train(
            model, x, y, cfg, generator=torch.Generator().manual_seed(0), exclude=exclude
        ):
            pass
        with torch.no_grad():
            return (model(xt)[:, 0] - yt) ** 2

    return fit


def test_retraining_the_objective_equals_kernel_loo_at_the_objective_ridge():
    """Full-batch GD on (1/n)Σ(f − y)² + (λ/2)‖w‖² with the point's weight zeroed converges
    to kernel ridge at nλ/2 without it: kernel LOO at the objective's ridge is the truth,
    the bare λ is not."""
    x, y, xt, yt = _problem()
    lam = 0.05
    idx = [1, 4, 9, 20]
    truth = run_to_end(retraining_effects(_gd_fit(x, y, xt, yt, lam), idx))
    kx, kt = x @ x.T, xt @ x.T
    at_objective = ntk_loo_influence(kx, kt, y, yt, objective_ridge(24, lam))[:, idx]
    at_lambda = ntk_loo_influence(kx, kt, y, yt, lam)[:, idx]
    assert torch.allclose(truth, at_objective, atol=1e-9, rtol=0)
    assert (truth - at_lambda).abs().max() > 1e-3


def test_exclude_keeps_the_batches_and_their_normalisation():
    """A point with zero gradient (x = 0 for a linear model) changes nothing when its
    weight is zeroed; dropping it from the batches instead would change every batch."""
    x, y, _, _ = _problem(n=10)
    x[3] = 0.0
    cfg = TrainSpec(optimizer="sgd", lr=0.5, epochs=5, batch_size=4, l2=1e-3)

    def run(exclude):
        m = _Linear(x.shape[1])
        for _ in train(m, x, y, cfg, generator=torch.Generator().manual_seed(1), exclude=exclude):
            pass
        return m.w.detach().clone()

    assert torch.equal(run(None), run(3))
    assert not torch.equal(run(None), run(4))


def test_exclude_out_of_range_is_a_config_error():
    x, y, _, _ = _problem(n=6)
    cfg = TrainSpec(optimizer="gd", lr=0.1, epochs=1)
    with pytest.raises(ConfigError, match="exclude"):
        list(train(_Linear(x.shape[1]), x, y, cfg, generator=torch.Generator(), exclude=6))


def test_agreement_rejects_mismatched_shapes_and_counts_signs():
    est = torch.tensor([[1.0, -2.0, 3.0], [1.0, -2.0, -5.0]])
    tru = torch.tensor([[2.0, 1.0, 1.0], [2.0, 1.0, 1.0]])
    a = agreement(est, tru)  # scores 1, -2, -1 vs 2, 1, 1: one sign agrees
    assert a.sign_agreement == pytest.approx(1 / 3)
    with pytest.raises(ConfigError):
        agreement(est, tru[:, :2])
    with pytest.raises(ConfigError):
        run_to_end(retraining_effects(lambda e: torch.zeros(2), []))
