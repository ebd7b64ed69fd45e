"""One intra-op thread for these small linear-algebra tests.

On a shared, oversubscribed machine two OpenMP threads per tiny SVD are many times
slower than one; results do not depend on the thread count.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
