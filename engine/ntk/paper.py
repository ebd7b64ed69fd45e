"""The paper's reported NTK distances (arXiv 2603.13085 v1, Table 1; docs/protocol.md#ntk), as data."""

from __future__ import annotations

# (model label, data set name) -> {width m: ‖f_m − f_NTK‖ as printed}
PAPER_TABLE1: dict[tuple[str, str], dict[int, float]] = {
    ("2L-ReLU", "mnist"): {16: 45.1, 1024: 39.9, 4096: 39.2},
    ("MLP-Attn", "mnist"): {16: 10.3, 1024: 33.3, 4096: 43.4},
    ("2L-ReLU", "cifar10"): {16: 246.2, 1024: 101.7, 4096: 56.9},
    ("MLP-Attn", "cifar10"): {16: 3.7, 1024: 10.4, 4096: 12.6},
}


def paper_ntk_distances(model: str, dataset: str) -> dict[int, float] | None:
    """Table 1 row for a model label ("2L-ReLU" / "MLP-Attn") and data set, else None."""
    return PAPER_TABLE1.get((model, dataset.lower()))
