"""QKV-Attn's structured eNTK (attention + head) equals torch.func Jacobians (float64)."""

from __future__ import annotations

import pytest
import torch

from engine.errors import ConfigError
from engine.models import MLPAttn, QKVAttn
from engine.ntk import empirical_ntk, jacobian_ntk
from engine.ntk.qkv import has_qkv_structure, qkv_attention_ntk

F64 = torch.float64


def _data(n: int, d: int, seed: int) -> torch.Tensor:
    return torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _model(n_out: int, train_output: bool, d_k: int | None = 5) -> QKVAttn:
    m = QKVAttn(
        _data(12, 7, 0),
        16,
        n_out,
        d_k=d_k,
        sigma_w=1.0,
        train_output=train_output,
        seed=3,
        dtype=F64,
    )
    if train_output:  # move a off ±1 so the general branch is exercised
        with torch.no_grad():
            m.head.output.add_(
                0.3
                * torch.randn(
                    m.head.output.shape, generator=torch.Generator().manual_seed(1), dtype=F64
                )
            )
    return m


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("n_out", [1, 3])
@pytest.mark.parametrize("train_output", [False, True])
@pytest.mark.parametrize("d_k", [5, None])
def test_matches_jacobian(n_out: int, train_output: bool, d_k: int | None) -> None:
    m = _model(n_out, train_output, d_k)
    assert has_qkv_structure(m)
    x1, x2 = _data(6, 7, 1), _data(9, 7, 2)
    for a, b in [
        (empirical_ntk(m, x1, x2), jacobian_ntk(m, x1, x2)),
        (empirical_ntk(m, x1, method="structured", block_size=5), jacobian_ntk(m, x1)),
        (empirical_ntk(m, x2, x1, output=n_out - 1), jacobian_ntk(m, x2, x1, output=n_out - 1)),
    ]:
        assert a.shape == b.shape
        assert _rel(a, b) < 1e-10


def test_attention_part_is_most_of_the_kernel_at_small_sigma() -> None:
    """With the paper's σ_w = 0.01 the head's W term is tiny; the attention part is not."""
    m = QKVAttn(_data(12, 7, 0), 64, seed=0, dtype=F64)
    x = _data(8, 7, 4)
    full = empirical_ntk(m, x)
    att = qkv_attention_ntk(m, x)
    assert torch.allclose(full, full.T, atol=1e-14)
    assert float(torch.linalg.eigvalsh(full).min()) > -1e-12
    assert float(att.norm()) > 0
    assert _rel(full, jacobian_ntk(m, x)) < 1e-10


def test_frozen_attention_uses_the_head_closed_form() -> None:
    m = _model(1, False)
    for w in (m.attention.w_q, m.attention.w_k, m.attention.w_v):
        w.requires_grad_(False)
    assert not has_qkv_structure(m)
    x = _data(5, 7, 3)
    assert _rel(empirical_ntk(m, x, method="structured"), jacobian_ntk(m, x)) < 1e-10
    assert not has_qkv_structure(MLPAttn(_data(12, 7, 0), 16, sigma_w=1.0, seed=3, dtype=F64))


def test_bad_output_index() -> None:
    with pytest.raises(ConfigError, match="output"):
        empirical_ntk(_model(3, False), _data(4, 7, 1), output=3)


def test_one_unit_last_block() -> None:
    """Regression: torch._int_mm with inner dimension 1 returned garbage (m = 16, block 5)."""
    from engine.ntk import structured_ntk

    m = QKVAttn(_data(12, 7, 0), 16, sigma_w=1.0, seed=3, dtype=F64)
    x = _data(6, 7, 1)
    assert _rel(structured_ntk(m, x, block_size=5), structured_ntk(m, x)) < 1e-14
