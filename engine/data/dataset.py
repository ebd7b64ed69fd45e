"""The Dataset every loader returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch loads with the tensors: `malleability data list` needs none
    import torch


@dataclass(frozen=True)
class Dataset:
    """A seeded, class-balanced train/test subset, preprocessed per docs/protocol.md#models.

    ``x_train`` [n_train, d] / ``x_test`` [n_test, d]: flattened, pixels in [0, 1], each
    row scaled to unit ℓ2 norm (float64). ``x_train_raw`` / ``x_test_raw``: the same
    images in pixel space [0, 1] (for attacks). ``y_train`` / ``y_test``: for
    ``task == "binary"`` float64 targets ±1 (first class listed → +1); for
    ``task == "multiclass"`` int64 labels 0..K-1 in the order of ``classes``.
    ``labels_*`` are the data set's original integer labels. ``pixel_mean`` [d]: with
    ``data.center``, the training subset's per-pixel mean (× α with
    ``data.center_fraction``), subtracted from every image
    (train, test, attacked) before the unit-norm scaling, so ``x_*`` are the centred unit
    rows; None: the paper's preprocessing.
    """

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    x_train_raw: torch.Tensor
    x_test_raw: torch.Tensor
    labels_train: np.ndarray
    labels_test: np.ndarray
    classes: tuple[int, ...]
    class_names: tuple[str, ...]
    task: str
    image_shape: tuple[int, ...]
    source: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    pixel_mean: torch.Tensor | None = None

    @property
    def n_train(self) -> int:
        return int(self.x_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.x_test.shape[0])

    @property
    def d(self) -> int:
        return int(self.x_train.shape[1])

    @property
    def n_out(self) -> int:
        """Network outputs: 1 for binary (MSE on ±1), K for K-class (cross-entropy)."""
        return 1 if self.task == "binary" else len(self.classes)
