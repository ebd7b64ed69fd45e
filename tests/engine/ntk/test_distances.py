"""Predictor and kernel distances: known answers and shape checks."""

from __future__ import annotations

import math

import pytest
import torch

from engine.errors import ConfigError
from engine.ntk import PAPER_TABLE1, kernel_distance, ntk_distance, paper_ntk_distances


def test_ntk_distance_known() -> None:
    d = ntk_distance(torch.tensor([3.0, 0.0]), torch.tensor([0.0, 4.0]))
    assert d.absolute == pytest.approx(5.0) and d.relative == pytest.approx(1.25)
    multi = ntk_distance(torch.ones(4, 3), torch.zeros(4, 3) + 2)
    assert multi.absolute == pytest.approx(math.sqrt(12)) and multi.relative == pytest.approx(0.5)
    col = ntk_distance(torch.tensor([[1.0], [2.0]]), torch.tensor([1.0, 0.0]))
    assert col.absolute == pytest.approx(2.0)
    assert math.isinf(ntk_distance(torch.ones(2), torch.zeros(2)).relative)
    with pytest.raises(ConfigError):
        ntk_distance(torch.ones(4, 2), torch.ones(4, 3))


def test_kernel_distance_known() -> None:
    b = torch.randn(5, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert kernel_distance(b, b) == 0.0
    assert kernel_distance(2 * b, b) == pytest.approx(1.0)
    assert kernel_distance(b, 2 * b) == pytest.approx(0.5)
    with pytest.raises(ConfigError):
        kernel_distance(b, b[:4])


def test_paper_table() -> None:
    assert paper_ntk_distances("MLP-Attn", "CIFAR10") == {16: 3.7, 1024: 10.4, 4096: 12.6}
    assert paper_ntk_distances("2L-ReLU", "digits") is None
    assert all(set(v) == {16, 1024, 4096} for v in PAPER_TABLE1.values())
