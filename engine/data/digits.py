"""scikit-learn's handwritten digits: 1,797 real 8×8 images with 17 grey levels (0..16)."""

from __future__ import annotations

import numpy as np

from engine.data.raw import RawData, RawSplit
from engine.data.registry import get_info


def load_digits_raw() -> RawData:
    """One split "all": images [1797, 8, 8] in 0..16 (scale 16), labels [1797] int64."""
    from sklearn.datasets import load_digits  # bundled with scikit-learn: no download

    bunch = load_digits()
    info = get_info("digits")
    images = np.asarray(bunch.images, dtype=np.float64)
    labels = np.asarray(bunch.target, dtype=np.int64)
    return RawData(
        name="digits",
        splits={"all": RawSplit(images, labels, origin="sklearn.datasets.load_digits")},
        class_names=info.class_names,
        image_shape=(8, 8),
        scale=16.0,
        source="sklearn.datasets.load_digits",
    )
