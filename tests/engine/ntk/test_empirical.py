"""Empirical NTK: structured closed form vs torch.func Jacobians, invariants, Θ_m → Θ∞."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from engine.errors import ConfigError
from engine.models import MLPAttn, TwoLayerNet
from engine.ntk import (
    analytic_ntk_for,
    empirical_ntk,
    kernel_distance,
    matrix_to_ntk_blocks,
    ntk_blocks_to_matrix,
)

F64 = torch.float64


def _data(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, d, generator=g, dtype=F64)


def _net(kind: str, width: int, n_out: int, train_output: bool, seed: int = 1) -> nn.Module:
    d = 6
    if kind == "relu":
        model: nn.Module = TwoLayerNet(
            d, width, n_out, sigma_w=1.0, train_output=train_output, seed=seed, dtype=F64
        )
    else:
        model = MLPAttn(
            _data(9, d, 99),
            width,
            n_out,
            sigma_w=1.0,
            train_output=train_output,
            seed=seed,
            dtype=F64,
        )
    if train_output:
        # move a off ±1 so the general (non-integer) branch is exercised too
        g = torch.Generator().manual_seed(seed + 7)
        with torch.no_grad():
            model.head.output.add_(
                0.3 * torch.randn(model.head.output.shape, generator=g, dtype=F64)
            )
    return model


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("kind", ["relu", "attn"])
@pytest.mark.parametrize("n_out", [1, 3])
@pytest.mark.parametrize("train_output", [False, True])
@pytest.mark.parametrize("cross", [False, True])
def test_structured_equals_jacobian(kind: str, n_out: int, train_output: bool, cross: bool) -> None:
    model = _net(kind, 17, n_out, train_output)
    x1 = _data(8, 6, 0)
    x2 = _data(5, 6, 1) if cross else None
    s = empirical_ntk(model, x1, x2, method="structured", block_size=5)
    j = empirical_ntk(model, x1, x2, method="jacobian", block_size=3)
    n2 = 5 if cross else 8
    assert s.shape == ((8, n2) if n_out == 1 else (8, n2, n_out, n_out))
    assert _rel(s, j) < 1e-10
    assert empirical_ntk(model, x1, x2).shape == s.shape  # auto → structured


def test_multi_output_blocks_with_fixed_signs() -> None:
    model = _net("relu", 23, 3, False)
    x = _data(7, 6, 2)
    theta = empirical_ntk(model, x)
    # a ∈ {±1}: the diagonal blocks are all the same kernel (a² = 1)
    for k in range(3):
        assert torch.allclose(theta[:, :, k, k], theta[:, :, 0, 0], rtol=0, atol=1e-14)
        assert torch.allclose(empirical_ntk(model, x, output=k), theta[:, :, k, k], atol=1e-14)
    # and off-diagonal blocks weight each unit by a_rk a_rl
    w, a = model.head.weight, model.head.output
    xt = model.features(x)
    d = (xt @ w.T > 0).to(F64)
    off = (xt @ xt.T) * ((d * (a[:, 0] * a[:, 2])) @ d.T) / 23
    assert torch.allclose(theta[:, :, 0, 2], off, atol=1e-14)
    mat = ntk_blocks_to_matrix(theta)
    assert mat.shape == (21, 21)
    assert torch.equal(mat[1 * 3 + 2, 4 * 3 + 0], theta[1, 4, 2, 0])
    assert torch.equal(matrix_to_ntk_blocks(mat, 3), theta)


def test_block_size_does_not_change_result() -> None:
    model = _net("attn", 50, 1, True)
    x = _data(9, 6, 3)
    a = empirical_ntk(model, x, block_size=7)
    b = empirical_ntk(model, x, block_size=4096)
    assert _rel(a, b) < 1e-13


def test_linear_model_ntk_is_gram() -> None:
    x = _data(6, 4, 4)
    lin = nn.Linear(4, 1, bias=False).to(F64)
    theta = empirical_ntk(lin, x)  # auto → jacobian (no structure)
    assert torch.allclose(theta, x @ x.T, atol=1e-13)
    lin3 = nn.Linear(4, 3, bias=False).to(F64)
    t3 = empirical_ntk(lin3, x, x[:2], block_size=4)
    expect = (x @ x[:2].T)[:, :, None, None] * torch.eye(3, dtype=F64)
    assert torch.allclose(t3, expect, atol=1e-13)


def test_only_trainable_parameters_count() -> None:
    model = _net("relu", 12, 1, True)
    x = _data(5, 6, 5)
    model.head.output.requires_grad_(False)
    frozen = _net("relu", 12, 1, False)
    with torch.no_grad():
        frozen.head.output.copy_(model.head.output)
    for method in ("structured", "jacobian"):
        assert _rel(empirical_ntk(model, x, method=method), empirical_ntk(frozen, x)) < 1e-12


def test_symmetric_psd() -> None:
    for kind in ("relu", "attn"):
        theta = empirical_ntk(_net(kind, 64, 1, False), _data(30, 6, 6))
        assert torch.allclose(theta, theta.T, rtol=0, atol=1e-15)
        evals = torch.linalg.eigvalsh(theta)
        assert evals.min() > -1e-12 * evals.max()
    big = ntk_blocks_to_matrix(empirical_ntk(_net("relu", 40, 3, True), _data(10, 6, 7)))
    ev = torch.linalg.eigvalsh(0.5 * (big + big.T))
    assert torch.allclose(big, big.T, atol=1e-14) and ev.min() > -1e-12 * ev.max()


@pytest.mark.parametrize("train_output", [False, True])
def test_init_kernel_converges_to_infinite_width(train_output: bool) -> None:
    x = _data(20, 6, 8)
    logs_m, logs_err = [], []
    for k in range(8, 15):
        m = 2**k
        errs = []
        for seed in (0, 1):
            net = TwoLayerNet(6, m, 1, sigma_w=1.0, train_output=train_output, seed=seed, dtype=F64)
            errs.append(kernel_distance(empirical_ntk(net, x), analytic_ntk_for(net, x)))
        logs_m.append(math.log(m))
        logs_err.append(math.log(sum(errs) / len(errs)))
    lm, le = torch.tensor(logs_m), torch.tensor(logs_err)
    slope = float(((lm - lm.mean()) * (le - le.mean())).sum() / ((lm - lm.mean()) ** 2).sum())
    assert slope < -0.3  # Monte Carlo rate is −1/2
    assert logs_err[-1] < math.log(0.05)


def test_bad_arguments() -> None:
    model = _net("relu", 8, 2, False)
    x = _data(3, 6, 9)
    with pytest.raises(ConfigError):
        empirical_ntk(model, x, method="exact")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        empirical_ntk(nn.Linear(6, 1).to(F64), x, method="structured")
    with pytest.raises(ConfigError):
        empirical_ntk(model, x, output=2)
    with pytest.raises(ConfigError):
        empirical_ntk(model, x, method="jacobian", output=5)
    with pytest.raises(ConfigError):
        empirical_ntk(model, x, block_size=0)


class _TrainableFront(nn.Module):
    """A TwoLayerNet behind a trainable linear map: has .head but no closed form."""

    def __init__(self) -> None:
        super().__init__()
        self.front = nn.Linear(6, 6, bias=False).to(F64)
        self.mlp = TwoLayerNet(6, 10, 1, sigma_w=1.0, seed=0, dtype=F64)

    @property
    def head(self) -> TwoLayerNet:
        return self.mlp

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.front(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp.forward_features(self.features(x))


def test_auto_falls_back_to_jacobian_for_extra_parameters() -> None:
    model = _TrainableFront()
    x = _data(5, 6, 10)
    theta = empirical_ntk(model, x)
    assert _rel(theta, empirical_ntk(model, x, method="jacobian")) < 1e-14
    with pytest.raises(ConfigError):
        empirical_ntk(model, x, method="structured")
    model.front.weight.requires_grad_(False)  # now only the head trains: closed form applies
    assert (
        _rel(
            empirical_ntk(model, x, method="structured"), empirical_ntk(model, x, method="jacobian")
        )
        < 1e-10
    )
