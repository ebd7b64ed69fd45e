"""Fixtures of the training tests: the small float64 data sets a stack of networks trains on."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

StackData = Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]


@pytest.fixture
def stack_data() -> StackData:
    """``data(b, n_out)``: network b's own data, x [12, 6] float64 in [0, 1) and ±1 targets
    [12] (n_out 1) or class indices [12] (n_out > 1), the same for the same b."""

    def data(b: int, n_out: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(10 + b)
        x = torch.rand(12, 6, generator=g, dtype=torch.float64)
        if n_out == 1:
            return x, torch.sign(torch.randn(12, generator=g, dtype=torch.float64))
        return x, torch.randint(0, n_out, (12,), generator=g)

    return data
