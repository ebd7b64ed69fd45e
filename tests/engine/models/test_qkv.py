"""QKV-Attn: identity weights give MLP-Attn exactly; standard init; no n×n matrices."""

from __future__ import annotations

import math

import pytest
import torch

from engine.errors import ConfigError
from engine.models import MODEL_LABELS, MLPAttn, QKVAttn, build_model
from engine.models.two_layer import normalize_rows

F64 = torch.float64


def _data(n: int, d: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("n_out", [1, 3])
def test_identity_weights_equal_mlp_attn_exactly(dtype: torch.dtype, n_out: int) -> None:
    ctx, x = _data(30, 12, 1).to(dtype), _data(17, 12, 2).to(dtype)
    q = QKVAttn(ctx, 24, n_out, seed=5, dtype=dtype)
    ref = MLPAttn(ctx, 24, n_out, seed=5, dtype=dtype)
    # same head init for the same seed: the models differ only in the attention
    assert torch.equal(q.head.weight, ref.head.weight)
    assert torch.equal(q.head.output, ref.head.output)
    assert not torch.equal(q(x), ref(x))
    q.attention.set_identity()
    for xb in (x, x[:1], ctx):  # both evaluation orders (batch sizes below/above d)
        assert torch.equal(q(xb), ref(xb))
        assert torch.equal(q.features(xb), ref.features(xb))


def test_both_evaluation_orders_agree() -> None:
    ctx = _data(40, 10, 3)
    att = QKVAttn(ctx, 8, d_k=6, seed=0, dtype=F64).attention
    x = _data(200, 10, 4)
    via_m = normalize_rows(x) @ att.w_q @ att.mixing()
    assert torch.allclose(att.transform(x), via_m, rtol=1e-12, atol=1e-14)
    assert torch.allclose(att.transform(x[:2]), via_m[:2], rtol=1e-12, atol=1e-14)


def test_matches_the_attention_formula_over_the_context() -> None:
    """Row i of (X̂W_Q)(X̂W_K)ᵀ(X̂W_V) for a context point, normalised: n×n only here."""
    ctx = _data(15, 9, 5)
    q = QKVAttn(ctx, 8, d_k=4, seed=2, dtype=F64)
    a = q.attention
    xh = normalize_rows(ctx)
    full = (xh @ a.w_q) @ (xh @ a.w_k).T @ (xh @ a.w_v)
    assert torch.allclose(q.features(ctx), normalize_rows(full), atol=1e-12)


def test_standard_initialisation_and_options() -> None:
    d = 400
    q = QKVAttn(_data(5, d, 6), 4, seed=0, dtype=F64)
    for w in (q.attention.w_q, q.attention.w_k, q.attention.w_v):
        assert w.shape == (d, d) and w.requires_grad
        assert abs(float(w.detach().std()) * math.sqrt(d) - 1.0) < 0.01
        assert abs(float(w.detach().mean())) < 0.1 / math.sqrt(d)
    assert not torch.equal(q.attention.w_q, q.attention.w_k)
    small = QKVAttn(_data(5, d, 6), 4, d_k=16, init_std=0.5, seed=0)
    assert small.attention.w_v.shape == (d, 16) and small.head.weight.shape == (4, 16)
    assert abs(float(small.attention.w_v.detach().std()) - 0.5) < 0.05
    assert small(_data(3, d, 7).float()).shape == (3, 1)
    with pytest.raises(ConfigError, match="d_k"):
        QKVAttn(_data(5, 8), 4, d_k=-1)
    with pytest.raises(ConfigError, match="d_k"):
        small.attention.set_identity()


def test_registered_and_recontexted() -> None:
    ctx = _data(20, 8, 8)
    m = build_model("qkv", ctx, 16, 2, seed=1, dtype=F64, d_k=5)
    assert isinstance(m, QKVAttn) and m.d_k == 5 and MODEL_LABELS["qkv"] == "QKV-Attn"
    assert m.fixed_features is False  # the head's input depends on trained weights
    x = _data(4, 8, 9)
    before = m(x)
    m.set_context(_data(20, 8, 10))
    assert not torch.allclose(m(x), before)
    m.set_context(ctx)
    assert torch.equal(m(x), before)
    with pytest.raises(ConfigError):
        m.set_context(_data(20, 7, 1))
