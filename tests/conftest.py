"""Shared test fixtures: the shared data folder, the gpu marker, one torch thread."""

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


ONE_THREAD = ("engine/influence", "engine/malleability", "engine/spectral")
"""Test folders of tiny float64 problems: on a shared, oversubscribed machine two OpenMP
threads per tiny SVD or solve are many times slower than one, and no result depends on
the thread count."""


@pytest.fixture
def one_thread():
    """One intra-op torch thread for the test, the count restored after."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parent
    for item in items:
        rel = Path(str(item.path)).resolve().relative_to(root).as_posix()
        if rel.startswith(ONE_THREAD):
            item.add_marker(pytest.mark.usefixtures("one_thread"))
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
