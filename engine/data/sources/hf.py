"""``hf:DIR``: a Hugging Face ``datasets`` dataset saved with ``save_to_disk`` (a Dataset
or a DatasetDict) or a folder of Parquet files, read with pyarrow (the ``[hf]`` extra).

Arrow and Parquet hold no code, so nothing is unpickled; ``datasets`` itself is not
needed to read. The image column holds encoded images (``Image`` feature: a struct of
bytes and path; only the embedded bytes are read, never a path) or nested lists of pixels;
the label column integers (a ``ClassLabel`` feature names them) or strings. Splits: a
DatasetDict's ``train`` / ``test``, Parquet files named ``train-*`` / ``test-*`` or in
``train/`` / ``test/`` folders; anything else is one split.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from engine.data.raw import RawData, RawSplit
from engine.data.sources.base import Source, SourceOptions
from engine.data.sources.common import (
    MAX_ARRAY_BYTES,
    check_count,
    decode_image,
    finish,
    image_shape_problem,
    inside,
    labels_from,
    pixel_scale,
    require_kind,
    stack_images,
)
from engine.errors import DatasetError, needs_extra
from engine.files import read_small_text

IMAGE_COLUMNS = ("image", "img")
MAX_JSON_BYTES = 16 << 20
"""Largest metadata file (state.json, dataset_info.json) read: real ones are a few KB."""


def _pyarrow() -> Any:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.ipc
        import pyarrow.parquet
    except ImportError:
        raise DatasetError(needs_extra("hf", "an hf: source")) from None
    return pyarrow


def _read_json(path: Path, where: str) -> Any:
    try:
        return json.loads(read_small_text(path, MAX_JSON_BYTES))
    except (OSError, ValueError) as e:  # FileRefused and UnicodeDecodeError are ValueErrors
        raise DatasetError(f"{where}: cannot read {path.name} ({e})") from None


def _checked(root: Path, path: Path, where: str) -> Path:
    real = inside(root, path, "data folder")
    # a FIFO would block the Arrow reader, a dangling link end in a bare OSError
    require_kind(path, "a regular file", where, "hf: reads regular Arrow and Parquet files")
    if real.stat().st_size > MAX_ARRAY_BYTES:
        raise DatasetError(f"{where}: {path.name} is over the {MAX_ARRAY_BYTES >> 30} GiB ceiling")
    return real


def _saved_split(root: Path, folder: Path, where: str) -> tuple[Any, dict]:
    """One ``save_to_disk`` Dataset folder → (pyarrow Table, features dict)."""
    pa = _pyarrow()
    state = _read_json(folder / "state.json", where)
    info = _read_json(folder / "dataset_info.json", where)
    files = [f.get("filename", "") for f in state.get("_data_files", [])]
    if not files:
        raise DatasetError(f"{where}: {folder}/state.json lists no data files")
    tables = []
    for name in files:
        path = _checked(root, folder / name, where)
        try:
            with pa.memory_map(str(path)) as src:
                tables.append(pa.ipc.open_stream(src).read_all())
        except (OSError, pa.ArrowInvalid) as e:
            raise DatasetError(f"{where}: {name} is not a readable Arrow file ({e})") from None
    return pa.concat_tables(tables), info.get("features") or {}


def _parquet(root: Path, files: list[Path], where: str) -> tuple[Any, dict]:
    pa = _pyarrow()
    tables = []
    features: dict = {}
    for f in files:
        path = _checked(root, f, where)
        try:
            t = pa.parquet.read_table(str(path))
        except (OSError, pa.ArrowInvalid) as e:
            raise DatasetError(f"{where}: {f.name} is not a readable Parquet file ({e})") from None
        meta = (t.schema.metadata or {}).get(b"huggingface")
        if meta and not features:
            try:
                features = json.loads(meta).get("info", {}).get("features", {}) or {}
            except ValueError:
                features = {}
        tables.append(t.replace_schema_metadata(None))
    try:
        return pa.concat_tables(tables), features
    except pa.ArrowInvalid as e:
        raise DatasetError(f"{where}: the Parquet files have different columns ({e})") from None


def _tables(root: Path, where: str) -> dict[str, tuple[Any, dict]]:
    """Split name → (Table, features) for a saved Dataset / DatasetDict or Parquet folder."""
    if (root / "dataset_dict.json").is_file():
        splits = _read_json(root / "dataset_dict.json", where).get("splits", [])
        use = ["train", "test"] if {"train", "test"} <= set(splits) else list(splits)[:1]
        if not use:
            raise DatasetError(f"{where}: dataset_dict.json lists no splits")
        return {(s if len(use) == 2 else "all"): _saved_split(root, root / s, where) for s in use}
    if (root / "state.json").is_file():
        return {"all": _saved_split(root, root, where)}
    files = sorted(p for p in root.rglob("*.parquet") if not p.name.startswith("."))
    if not files:
        raise DatasetError(
            f"{where}: neither a save_to_disk folder (state.json, dataset_dict.json) nor "
            "a folder of .parquet files"
        )
    by: dict[str, list[Path]] = {}
    for f in files:
        rel = f.relative_to(root).parts
        split = next((s for s in ("train", "test") if rel[0] == s or f.name.startswith(s)), "all")
        by.setdefault(split, []).append(f)
    if set(by) != {"train", "test"}:
        by = {"all": files}
    return {s: _parquet(root, fs, where) for s, fs in by.items()}


def _column(table: Any, want: str | None, defaults: tuple[str, ...], what: str, where: str) -> str:
    cols = list(table.column_names)
    for c in (want,) if want else defaults:
        if c in cols:
            return c
    flag = "--image-column" if what == "image" else "--label-column"
    asked = want or " or ".join(defaults)
    raise DatasetError(
        f"{where}: no {what} column {asked!r}; columns are {', '.join(cols)} (set {flag})"
    )


def _images(col: list[Any], where: str, opts: SourceOptions) -> np.ndarray:
    images, origins = [], []
    for i, v in enumerate(col):
        origin = f"{where} row {i}"
        if isinstance(v, dict):  # the Image feature: {"bytes": ..., "path": ...}
            if not v.get("bytes"):
                raise DatasetError(
                    f"{origin}: the image holds a path ({v.get('path')}), not its bytes; "
                    "save the dataset with embedded images (Dataset.save_to_disk does)"
                )
            images.append(decode_image(v["bytes"], origin, opts.image_size, opts.mode))
        else:
            try:
                a = np.asarray(v)
            except ValueError:  # ragged nested lists
                raise DatasetError(f"{origin}: rows of pixels of different lengths") from None
            if a.dtype.kind not in "biuf":
                raise DatasetError(f"{origin}: image of dtype {a.dtype}; expected numbers")
            problem = image_shape_problem(a.shape)
            if problem:
                raise DatasetError(f"{origin}: {problem}")
            images.append(a[..., 0] if a.ndim == 3 and a.shape[-1] == 1 else a)
        origins.append(origin)
    return stack_images(images, origins, where)


def load_hf(src: Source, opts: SourceOptions) -> RawData:
    """The saved dataset at ``src.path`` as RawData: images [N, h, w(, 3)], labels [N]
    int64, class names from the ClassLabel feature when there is one."""
    where, root = src.name, src.path
    require_kind(root, "a folder", where, "hf: needs a save_to_disk or Parquet folder")
    parts = _tables(root, where)
    first_table, features = next(iter(parts.values()))
    img_col = _column(first_table, opts.image_column, IMAGE_COLUMNS, "image", where)
    lab_col = _column(first_table, opts.label_column, (opts.label_column,), "label", where)
    check_count(sum(t.num_rows for t, _ in parts.values()), where)
    names_feat = (features.get(lab_col) or {}).get("names")
    labels_all = []
    images: dict[str, np.ndarray] = {}
    for split, (table, _) in parts.items():
        for c in (img_col, lab_col):
            if c not in table.column_names:
                raise DatasetError(f"{where}: the {split} split has no column {c!r}")
        images[split] = _images(table.column(img_col).to_pylist(), where, opts)
        labels_all.append(np.asarray(table.column(lab_col).to_pylist()))
    lab = np.concatenate(labels_all)
    if names_feat and lab.dtype.kind in "iu":
        if lab.size and (lab.min() < 0 or lab.max() >= len(names_feat)):
            raise DatasetError(f"{where}: labels outside the ClassLabel's {len(names_feat)} names")
        codes, names = lab.astype(np.int64), tuple(str(n) for n in names_feat)
    else:
        codes, names = labels_from(lab, where)
    splits, start = {}, 0
    for split, ims in images.items():
        n = ims.shape[0]
        splits[split] = RawSplit(ims, codes[start : start + n], f"{src.path.name} ({split})")
        start += n
    scale = pixel_scale(list(images.values()), where)  # the checks npz: applies
    return finish(where, splits, names, scale=scale, source=str(root))
