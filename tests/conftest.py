"""Shared test fixtures: the shared data folder and the gpu marker."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """``<repo>/../shared/data``; skips the test with a clear reason when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA.resolve()}")
    return SHARED_DATA


def skip_without_gpu() -> None:
    """Skip the calling test when no CUDA device is present (use with @pytest.mark.gpu)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
