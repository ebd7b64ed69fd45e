"""The loaders' common output: whole splits in pixel units, before subsetting."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class RawSplit:
    """One official split: ``images`` [N, *image_shape] (any numeric dtype), ``labels`` [N] int64."""

    images: np.ndarray
    labels: np.ndarray
    origin: str
    """Where it came from, for messages (file name or "sklearn")."""

    @property
    def size(self) -> int:
        return int(self.labels.shape[0])


@dataclass(frozen=True)
class RawData:
    """Everything a loader read: ``splits`` maps "train" / "test" (or "all") to a RawSplit.

    Pixels divided by ``scale`` lie in [0, 1] (255 for uint8 images, 16 for sklearn digits).
    """

    name: str
    splits: dict[str, RawSplit]
    class_names: tuple[str, ...]
    image_shape: tuple[int, ...]
    scale: float
    source: str
    notes: tuple[str, ...] = field(default_factory=tuple)
