"""Data sets: registry, loaders (digits, MNIST, Fashion-MNIST, CIFAR-10, synthetic), your own
data as sources (``npz:FILE``, ``folder:DIR``, ``hf:DIR``; ``engine.data.sources``), subsets.

``load_dataset(name, *, root=None, classes=None, n_train, n_test, seed) -> Dataset`` is the
one entry point; ``DATASETS`` describes each data set; ``find_root`` / ``dataset_status``
say where the files are; ``subset_counts`` / ``subset_problem`` check a subset against the
data set without drawing it; ``engine.data.fetch.fetch`` downloads them.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from engine.data.synthetic import SyntheticData, make_synthetic

_WHERE = {
    "Dataset": "dataset",
    **dict.fromkeys(
        ("DatasetStatus", "dataset_status", "image_shape", "load_dataset", "load_raw",
         "subset_counts"),
        "load",
    ),
    "RawData": "raw",
    "RawSplit": "raw",
    **dict.fromkeys(
        ("DATASETS", "ENV_VAR", "DatasetInfo", "RemoteFile", "canonical_name",
         "default_data_home", "find_root", "get_info"),
        "registry",
    ),
    "SourceOptions": "sources",
    "is_source": "sources",
    "ClassCounts": "subset",
    "class_counts": "subset",
    "subset_problem": "subset",
    "SyntheticData": "synthetic",
    "make_synthetic": "synthetic",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    """Each name loads its module on first use (PEP 562): finding and counting data sets
    (``malleability data list``) starts without numpy, and the synthetic generator's names
    without torch."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'engine.data' has no attribute {name!r}")
    value = getattr(import_module(f"engine.data.{where}"), name)
    globals()[name] = value
    return value


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
