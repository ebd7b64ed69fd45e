"""``load_dataset`` and ``dataset_status``: from a name (and maybe a folder) to a Dataset."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.data.registry import check_root, find_root, get_info, not_found_error
from engine.data.sources.base import is_source
from engine.data.status import DatasetStatus
from engine.errors import DatasetError

if TYPE_CHECKING:  # numpy loads with the data, not to find it (`data list`)
    from engine.data.dataset import Dataset
    from engine.data.raw import RawData
    from engine.data.sources import SourceOptions
    from engine.data.subset import ClassCounts


def load_raw(
    name: str, root: str | os.PathLike | None = None, source: SourceOptions | None = None
) -> RawData:
    """Every split of ``name`` as read from disk (or built in), before subsetting.

    ``name`` may be a source (``npz:FILE``, ``folder:DIR``, ``hf:DIR``; ``engine.data.sources``),
    read with ``source`` (image size and mode, HF columns); ``root`` does not apply to it.
    """
    if is_source(name):
        from engine.data.sources import load_source

        return load_source(name, source)
    info = get_info(name)
    if info.name == "digits":
        from engine.data.digits import load_digits_raw

        return load_digits_raw()
    if info.name == "synthetic":
        from engine.data.synthetic import load_synthetic_raw

        return load_synthetic_raw()
    check_root(root)
    folder = find_root(info.name, root)
    if folder is None:
        raise not_found_error(info.name, root)
    if info.kind == "idx":
        from engine.data.mnist import load_idx_dataset

        return load_idx_dataset(info.name, folder)
    from engine.data.cifar import load_cifar10

    return load_cifar10(folder)


def load_dataset(
    name: str,
    *,
    root: str | os.PathLike | None = None,
    classes: Sequence[int] | None = None,
    n_train: int,
    n_test: int,
    seed: int,
    center: bool | float = False,
    source: SourceOptions | None = None,
) -> Dataset:
    """A seeded, class-balanced, disjoint train/test subset of data set ``name``.

    ``name``: one of ``DATASETS`` (digits, mnist, fashion-mnist, cifar10, synthetic).
    ``root``: the folder holding the files or its parent (``--data-dir``), searched first,
    then $MALLEABILITY_DATA, the user data dir and system locations (``engine.data.registry``).
    ``classes``: labels to keep, e.g. (3, 8) → binary, y ±1 with 3 → +1; three or more →
    multiclass, y 0..K-1 in that order; None → all classes. Each class gets n // K examples,
    the first n % K classes one more. Train comes from the official train split and test
    from the test split; when only one split is present both are carved from it and
    ``Dataset.notes`` says so. Returns x_train [n_train, d] / x_test [n_test, d] with
    unit-norm rows and x_*_raw in [0, 1], float64. Raises DatasetError (missing or corrupt
    files, unknown name, impossible subset) or ConfigError (invalid n or seed).
    ``center``: subtract the training subset's per-pixel mean first (``Dataset.pixel_mean``);
    a number α in [0, 1] subtracts α × the mean (``data.center_fraction``).
    ``name`` may also be a source ``npz:FILE`` / ``folder:DIR`` / ``hf:DIR`` read with
    ``source`` (``engine.data.sources.SourceOptions``); the same subset rule applies.
    """
    raw = load_raw(name, root, source)
    from engine.data.subset import build_dataset

    return build_dataset(
        raw, classes=classes, n_train=n_train, n_test=n_test, seed=seed, center=center
    )


def subset_counts(
    name: str, root: str | os.PathLike | None = None, source: SourceOptions | None = None
) -> ClassCounts:
    """Images per class and split of data set ``name`` (``subset_problem`` checks a subset
    against them with the loader's rule). Reads the data set once; raises DatasetError as
    ``load_dataset`` does when it is missing or damaged."""
    from engine.data.subset import class_counts

    return class_counts(load_raw(name, root, source))


def image_shape(
    name: str, root: str | os.PathLike | None = None, source: SourceOptions | None = None
) -> tuple[int, ...]:
    """The image shape of ``name`` (a built-in's from the registry; a source's as read)."""
    if is_source(name):
        return load_raw(name, root, source).image_shape
    return get_info(name).image_shape


def dataset_status(
    name: str, root: str | os.PathLike | None = None, source: SourceOptions | None = None
) -> DatasetStatus:
    """Find ``name`` without loading it: found where, which splits, how to get it.

    A source (``npz:`` / ``folder:`` / ``hf:``) is read and validated in full (it has no
    cheap header); ``problem`` then says why it cannot be used.
    """
    if is_source(name):
        from engine.data.sources.status import source_status

        return source_status(name, source)
    info = get_info(name)
    base = dict(
        name=info.name,
        description=info.description,
        builtin=info.builtin,
        official=dict(info.splits),
        how_to_get=info.how_to_get,
    )
    if info.builtin:
        return DatasetStatus(found=True, path=None, splits=dict(info.splits), **base)  # type: ignore[arg-type]
    folder = find_root(info.name, root)
    if folder is None:
        return DatasetStatus(found=False, path=None, **base)  # type: ignore[arg-type]
    try:
        if info.kind == "idx":
            from engine.data.mnist import split_sizes
        else:
            from engine.data.cifar import split_sizes
        splits = split_sizes(folder)
        problem = None if splits else "no complete split (images and labels) in this folder"
    except DatasetError as e:
        splits, problem = {}, str(e)
    return DatasetStatus(found=True, path=folder, splits=splits, problem=problem, **base)  # type: ignore[arg-type]
