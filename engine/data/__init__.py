"""Data sets: registry, loaders (digits, MNIST, Fashion-MNIST, CIFAR-10, synthetic), your own
data as sources (``npz:FILE``, ``folder:DIR``, ``hf:DIR``; ``engine.data.sources``), subsets.

``load_dataset(name, *, root=None, classes=None, n_train, n_test, seed) -> Dataset`` is the
one entry point; ``DATASETS`` describes each data set; ``find_root`` / ``dataset_status``
say where the files are; ``subset_counts`` / ``subset_problem`` check a subset against the
data set without drawing it; ``engine.data.fetch.fetch`` downloads them.
"""

from typing import TYPE_CHECKING, Any

from engine.data.dataset import Dataset
from engine.data.load import (
    DatasetStatus,
    dataset_status,
    image_shape,
    load_dataset,
    load_raw,
    subset_counts,
)
from engine.data.raw import RawData, RawSplit
from engine.data.registry import (
    DATASETS,
    ENV_VAR,
    DatasetInfo,
    RemoteFile,
    canonical_name,
    default_data_home,
    find_root,
    get_info,
)
from engine.data.sources import SourceOptions, is_source
from engine.data.subset import ClassCounts, class_counts, subset_problem

if TYPE_CHECKING:
    from engine.data.synthetic import SyntheticData, make_synthetic


def __getattr__(name: str) -> Any:
    """The synthetic generator's names load torch on first use (PEP 562), so finding and
    counting data sets (``malleability data list``) starts without it."""
    if name in ("SyntheticData", "make_synthetic"):
        from engine.data import synthetic

        return getattr(synthetic, name)
    raise AttributeError(f"module 'engine.data' has no attribute {name!r}")


__all__ = [
    "DATASETS",
    "ClassCounts",
    "ENV_VAR",
    "Dataset",
    "DatasetInfo",
    "DatasetStatus",
    "RawData",
    "RawSplit",
    "RemoteFile",
    "SourceOptions",
    "SyntheticData",
    "canonical_name",
    "class_counts",
    "dataset_status",
    "default_data_home",
    "find_root",
    "get_info",
    "image_shape",
    "is_source",
    "load_dataset",
    "load_raw",
    "make_synthetic",
    "subset_counts",
    "subset_problem",
]
