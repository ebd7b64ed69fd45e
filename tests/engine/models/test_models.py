"""Models match docs/protocol.md#models exactly."""

from __future__ import annotations

import math

import pytest
import torch

from engine.errors import ConfigError
from engine.models import LinearizedAttention, MLPAttn, TwoLayerNet, build_model, normalize_rows


def _x(n: int = 7, d: int = 5, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_two_layer_formula_by_hand() -> None:
    x = _x()
    net = TwoLayerNet(5, 9, 3, seed=1, dtype=torch.float64)
    xt = x / x.norm(dim=1, keepdim=True)
    want = torch.relu(xt @ net.weight.T) @ net.output / math.sqrt(9)
    torch.testing.assert_close(net(x), want)
    assert set(net.output.unique().tolist()) <= {-1.0, 1.0}
    assert [n for n, p in net.named_parameters()] == ["weight"]


def test_init_scale_and_seed() -> None:
    a = TwoLayerNet(50, 400, seed=3, dtype=torch.float64)
    b = TwoLayerNet(50, 400, seed=3, dtype=torch.float64)
    torch.testing.assert_close(a.weight, b.weight)
    assert abs(float(a.weight.detach().std()) - 0.01) < 0.0005
    assert not torch.equal(a.weight, TwoLayerNet(50, 400, seed=4, dtype=torch.float64).weight)


def test_trainable_output_layer() -> None:
    net = TwoLayerNet(4, 6, 2, train_output=True, dtype=torch.float64)
    assert sorted(n for n, _ in net.named_parameters()) == ["output", "weight"]


def test_attention_is_row_of_xxtx() -> None:
    x = _x(6, 4)
    xn = normalize_rows(x)
    att = LinearizedAttention(x)
    rows = xn @ xn.T @ xn  # X Xᵀ X, row i = (C x_i)ᵀ
    torch.testing.assert_close(att(x), normalize_rows(rows))
    torch.testing.assert_close(att(x).norm(dim=1), torch.ones(6, dtype=torch.float64))


def test_attention_set_context_and_shape_check() -> None:
    x = _x(6, 4)
    att = LinearizedAttention(x)
    x2 = _x(6, 4, seed=9)
    att.set_context(x2)
    torch.testing.assert_close(att.C, normalize_rows(x2).T @ normalize_rows(x2))
    with pytest.raises(ConfigError, match="context"):
        att.set_context(_x(6, 3))


def test_mlp_attn_is_net_on_attention_features() -> None:
    x = _x(8, 5)
    model = MLPAttn(x, 16, 2, seed=2, dtype=torch.float64)
    relu = TwoLayerNet(5, 16, 2, seed=2, dtype=torch.float64)
    torch.testing.assert_close(model.head.weight, relu.weight)  # same init for the same seed
    torch.testing.assert_close(model(x), relu(LinearizedAttention(x)(x)))


@pytest.mark.parametrize("bad", [0, -3])
def test_bad_width_is_config_error(bad: int) -> None:
    with pytest.raises(ConfigError, match="width"):
        TwoLayerNet(4, bad)
    with pytest.raises(ConfigError, match="model"):
        build_model("transformer", _x(), 4)
