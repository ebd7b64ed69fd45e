"""MNIST and Fashion-MNIST from the original IDX files (``train-*`` and ``t10k-*``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from engine.data.idx import IMAGES_MAGIC, LABELS_MAGIC, idx_count, read_idx
from engine.data.registry import get_info
from engine.errors import DatasetError

if TYPE_CHECKING:
    from engine.data.raw import RawData

SPLIT_PREFIX = {"train": "train", "test": "t10k"}


def _gz_size(path: Path) -> int | None:
    """The uncompressed size a gzip file records (its last 4 bytes, modulo 2**32)."""
    try:
        with open(path, "rb") as f:
            f.seek(-4, 2)
            return int.from_bytes(f.read(4), "little")
    except OSError:
        return None


def find_idx_file(folder: Path, stem: str) -> Path | None:
    """``stem`` (e.g. ``train-images-idx3-ubyte``) with or without ``.gz``, or with ``.idx3``.

    Both a raw file and its ``.gz`` (``gunzip -k``): the raw one when the sizes agree, a
    ``DatasetError`` naming both when they do not (one of them is another file).
    """
    for raw in (stem, stem.replace("-idx", ".idx")):
        p, gz = folder / raw, folder / (raw + ".gz")
        if p.is_file() and gz.is_file():
            size = _gz_size(gz)
            if size != p.stat().st_size % 2**32:
                raise DatasetError(
                    f"{folder}: both {p.name} and {gz.name} are here and differ in size "
                    f"({p.stat().st_size} bytes, {size} unpacked): keep the right one"
                )
            return p
        for cand in (gz, p):
            if cand.is_file():
                return cand
    return None


def _split_files(folder: Path, split: str) -> tuple[Path | None, Path | None]:
    pre = SPLIT_PREFIX[split]
    return (
        find_idx_file(folder, f"{pre}-images-idx3-ubyte"),
        find_idx_file(folder, f"{pre}-labels-idx1-ubyte"),
    )


def _check_pair(folder: Path, split: str, img: Path | None, lab: Path | None) -> None:
    pre = SPLIT_PREFIX[split]
    if img is not None and lab is None:
        raise DatasetError(
            f"{folder}: found {img.name} but not {pre}-labels-idx1-ubyte[.gz] (the {split} labels)"
        )
    if lab is not None and img is None:
        raise DatasetError(
            f"{folder}: found {lab.name} but not {pre}-images-idx3-ubyte[.gz] (the {split} images)"
        )


def split_sizes(folder: Path) -> dict[str, int]:
    """Split sizes read from the IDX headers only (cheap; for ``data list``)."""
    out = {}
    for split in SPLIT_PREFIX:
        img, lab = _split_files(folder, split)
        if img is not None and lab is not None:
            out[split] = idx_count(img, IMAGES_MAGIC)
    return out


def load_idx_dataset(name: str, folder: Path) -> RawData:
    """Read every split present in ``folder`` for ``name`` ("mnist" or "fashion-mnist").

    Images [N, 28, 28] uint8, labels [N] int64 in 0..9. Raises DatasetError on a missing
    half of a split, a bad header, a wrong size, a corrupt gzip or out-of-range labels.
    """
    import numpy as np

    from engine.data.raw import RawData, RawSplit

    info = get_info(name)
    rows, cols = info.image_shape
    splits: dict[str, RawSplit] = {}
    for split in SPLIT_PREFIX:
        img, lab = _split_files(folder, split)
        _check_pair(folder, split, img, lab)
        if img is None or lab is None:
            continue
        images = read_idx(img, magic=IMAGES_MAGIC, dims=(rows, cols))
        labels = read_idx(lab, magic=LABELS_MAGIC).astype(np.int64)
        if images.shape[0] != labels.shape[0]:
            raise DatasetError(
                f"{folder}: {img.name} holds {images.shape[0]} images but {lab.name} "
                f"holds {labels.shape[0]} labels; expected the same count"
            )
        bad = labels[(labels < 0) | (labels >= len(info.class_names))]
        if bad.size:
            raise DatasetError(
                f"{lab}: label {int(bad[0])} out of range, expected 0..{len(info.class_names) - 1}"
            )
        splits[split] = RawSplit(images, labels, origin=img.name)
    if not splits:
        raise DatasetError(
            f"{name}: no IDX files in {folder}: expected train-images-idx3-ubyte[.gz], "
            f"train-labels-idx1-ubyte[.gz], t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]"
        )
    return RawData(
        name=info.name,
        splits=splits,
        class_names=info.class_names,
        image_shape=(rows, cols),
        scale=255.0,
        source=str(folder),
    )
