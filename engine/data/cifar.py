"""CIFAR-10 "python version" batches, read through a restricted unpickler.

The official batches are pickles, and a pickle can run arbitrary code when loaded.
``RestrictedUnpickler`` resolves only the few globals a real batch refers to (numpy array
reconstruction, ``numpy.ndarray``, ``numpy.dtype``, ``_codecs.encode`` for the bytes of a
Python-2 style pickle); any other global raises DatasetError before anything is called.
"""

from __future__ import annotations

import codecs
import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from engine.data.raw import RawData, RawSplit
from engine.data.registry import get_info
from engine.errors import DatasetError

TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
META = "batches.meta"
_PIXELS = 3 * 32 * 32
# A real batch file is 31 MB (10000 images); anything over this documented ceiling is
# refused before unpickling, so a crafted file cannot make the loader allocate without bound.
MAX_BATCH_BYTES = 64 << 20


def _numpy_globals() -> dict[tuple[str, str], Any]:
    try:  # numpy ≥ 2: the real module; resolving it directly avoids numpy.core's shim warnings
        from numpy._core import multiarray, numeric
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import multiarray, numeric  # type: ignore[no-redef]
    table: dict[tuple[str, str], Any] = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): codecs.encode,
    }
    for mod in ("numpy.core", "numpy._core"):
        table[(f"{mod}.multiarray", "_reconstruct")] = multiarray._reconstruct
        # pickle protocol 5 (numpy ≥ 1.16) rebuilds arrays with _frombuffer instead
        table[(f"{mod}.numeric", "_frombuffer")] = getattr(numeric, "_frombuffer")  # noqa: B009
    return table


class RestrictedUnpickler(pickle.Unpickler):
    """An Unpickler whose ``find_class`` knows only the globals of a CIFAR-10 batch."""

    def __init__(self, file: io.BufferedIOBase, origin: str) -> None:
        super().__init__(file, encoding="bytes")
        self._origin = origin
        self._allowed = _numpy_globals()

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise DatasetError(
                f"{self._origin}: pickle refers to the global {module}.{name}, which a CIFAR-10 "
                "batch never needs; refusing to load it (allowed: numpy array reconstruction, "
                "numpy.ndarray, numpy.dtype, _codecs.encode)"
            ) from None

    def persistent_load(self, pid: Any) -> Any:
        raise DatasetError(f"{self._origin}: pickle uses persistent ids; not a CIFAR-10 batch")


def safe_unpickle(path: Path) -> Any:
    """Load one pickle file with :class:`RestrictedUnpickler`; any failure → DatasetError."""
    try:
        size = path.stat().st_size
        if size > MAX_BATCH_BYTES:
            raise DatasetError(
                f"{path}: {size:,} bytes, over the {MAX_BATCH_BYTES >> 20} MiB ceiling of a CIFAR-10 "
                "batch (a real one is 31 MB); refusing to load it"
            )
        with open(path, "rb") as f:
            return RestrictedUnpickler(f, str(path)).load()  # type: ignore[arg-type]
    except DatasetError:
        raise
    except OSError as e:
        raise DatasetError(f"{path}: cannot read ({e.strerror or e})") from None
    except Exception as e:  # UnpicklingError, EOFError, ValueError, TypeError, ...
        raise DatasetError(
            f"{path}: not a valid CIFAR-10 pickle batch ({type(e).__name__}: {e})"
        ) from None


def _get(d: dict, key: str) -> Any:
    for k in (key.encode(), key):  # bytes keys (official, Python 2), str keys (Python 3 writers)
        if k in d:
            return d[k]
    raise KeyError(key)


def _int_labels(labels: Any, n: int, path: Path) -> np.ndarray:
    """b'labels' as int64 [n]: a flat list (or integer array) of exactly ``n`` integers.

    Checked element by element before numpy sees it: a float label is refused (numpy would
    truncate 1.7 to 1), an int too large for int64 is refused (not an OverflowError), and a
    nested list (which a pickle can make huge from a few bytes of shared references) never
    reaches ``np.asarray``.
    """
    if isinstance(labels, np.ndarray):
        if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
            raise DatasetError(
                f"{path}: b'labels' is a {labels.dtype} array {labels.shape}, expected {n} integers"
            )
        return labels.astype(np.int64)
    if not isinstance(labels, (list, tuple)):
        raise DatasetError(
            f"{path}: b'labels' is {type(labels).__name__}, expected a list of {n} integers"
        )
    if len(labels) != n:
        raise DatasetError(f"{path}: {n} images but {len(labels)} labels; expected the same count")
    for v in labels:
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise DatasetError(f"{path}: label {str(v)[:20]!r} is not an integer, expected 0..9")
        if not 0 <= int(v) <= 9:
            raise DatasetError(f"{path}: label {str(v)[:20]} out of range, expected 0..9")
    return np.asarray(labels, dtype=np.int64)


def read_batch(path: Path) -> RawSplit:
    """One batch: images [N, 3, 32, 32] uint8 (channel-first), labels [N] int64 in 0..9."""
    obj = safe_unpickle(path)
    if not isinstance(obj, dict):
        raise DatasetError(
            f"{path}: expected a dict with b'data' and b'labels', got {type(obj).__name__}"
        )
    try:
        data, labels = _get(obj, "data"), _get(obj, "labels")
    except KeyError as e:
        raise DatasetError(f"{path}: CIFAR-10 batch without the key b'{e.args[0]}'") from None
    if (
        not isinstance(data, np.ndarray)
        or data.dtype != np.uint8
        or data.ndim != 2
        or data.shape[1] != _PIXELS
    ):
        desc = (
            f"{data.dtype} array {data.shape}"
            if isinstance(data, np.ndarray)
            else type(data).__name__
        )
        raise DatasetError(f"{path}: b'data' is {desc}, expected a uint8 array N×{_PIXELS}")
    labels = _int_labels(labels, data.shape[0], path)
    if labels.shape[0] != data.shape[0]:
        raise DatasetError(
            f"{path}: {data.shape[0]} images but {labels.shape[0]} labels; expected the same count"
        )
    bad = labels[(labels < 0) | (labels > 9)]
    if bad.size:
        raise DatasetError(f"{path}: label {int(bad[0])} out of range, expected 0..9")
    return RawSplit(data.reshape(-1, 3, 32, 32), labels, origin=path.name)


def _class_names(folder: Path) -> tuple[str, ...]:
    default = get_info("cifar10").class_names
    meta = folder / META
    if not meta.is_file():
        return default
    obj = safe_unpickle(meta)
    try:
        names = tuple(
            n.decode("latin1") if isinstance(n, bytes) else str(n) for n in _get(obj, "label_names")
        )
    except (KeyError, TypeError, AttributeError):
        raise DatasetError(f"{meta}: expected a dict with b'label_names'") from None
    if len(names) != 10:
        raise DatasetError(f"{meta}: {len(names)} label names, expected 10")
    return tuple(_clean_name(n, i) for i, n in enumerate(names))


NAME_CHARS = 40
"""The longest label name kept from batches.meta."""


def _clean_name(name: str, index: int) -> str:
    """A label name fit to print: control characters (terminal escapes) removed, at most
    ``NAME_CHARS`` characters; ``class N`` when nothing is left."""
    import unicodedata

    text = "".join(c for c in name if not unicodedata.category(c).startswith("C")).strip()
    if len(text) > NAME_CHARS:
        text = text[: NAME_CHARS - 1] + "…"
    return text or f"class {index}"


def split_sizes(folder: Path) -> dict[str, int]:
    """Exact split sizes (reads the batches: about a second for the full data set)."""
    out = {}
    train = [read_batch(folder / b).size for b in TRAIN_BATCHES if (folder / b).is_file()]
    if train:
        out["train"] = sum(train)
    if (folder / TEST_BATCH).is_file():
        out["test"] = read_batch(folder / TEST_BATCH).size
    return out


def load_cifar10(folder: Path) -> RawData:
    """Read the train batches present (data_batch_1..5), test_batch, and batches.meta."""
    train = [read_batch(folder / b) for b in TRAIN_BATCHES if (folder / b).is_file()]
    splits: dict[str, RawSplit] = {}
    if train:
        names = "+".join(s.origin for s in train)
        splits["train"] = RawSplit(
            np.concatenate([s.images for s in train]),
            np.concatenate([s.labels for s in train]),
            names,
        )
    if (folder / TEST_BATCH).is_file():
        splits["test"] = read_batch(folder / TEST_BATCH)
    if not splits:
        raise DatasetError(
            f"cifar10: no batches in {folder}: expected data_batch_1..5 and test_batch "
            "(the cifar-10-batches-py folder or its parent)"
        )
    return RawData(
        name="cifar10",
        splits=splits,
        class_names=_class_names(folder),
        image_shape=(3, 32, 32),
        scale=255.0,
        source=str(folder),
    )
