"""Factories that write tiny, valid data files in the original formats, and env isolation."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from engine.data.idx import write_idx


@pytest.fixture(autouse=True)
def isolated_data_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """No $MALLEABILITY_DATA and an empty user data dir, so the real ones never leak in."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.delenv("MALLEABILITY_DATA", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def make_images(
    n: int, shape: tuple[int, ...], seed: int, offset: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Random uint8 images [n, *shape] whose first pixel encodes the row (unique rows) and
    labels cycling 0..9 (balanced)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, *shape), dtype=np.uint8)
    flat = images.reshape(n, -1)
    flat[:, 0] = (np.arange(n) + offset) % 256  # with pixel 1 below: a unique id per row
    flat[:, 1] = (np.arange(n) + offset) // 256
    labels = (np.arange(n) % 10).astype(np.uint8)
    return images, labels


IdxWriter = Callable[..., dict[str, tuple[np.ndarray, np.ndarray]]]


@pytest.fixture
def write_idx_set() -> IdxWriter:
    """write(folder, train=60, test=30, gz=True) → {"train": (images, labels), ...}."""

    def write(folder: Path, train: int | None = 60, test: int | None = 30, gz: bool = True):
        folder.mkdir(parents=True, exist_ok=True)
        ext = ".gz" if gz else ""
        out = {}
        for split, pre, n, off in (("train", "train", train, 0), ("test", "t10k", test, 1000)):
            if n is None:
                continue
            images, labels = make_images(n, (28, 28), seed=n + off, offset=off)
            write_idx(folder / f"{pre}-images-idx3-ubyte{ext}", images)
            write_idx(folder / f"{pre}-labels-idx1-ubyte{ext}", labels)
            out[split] = (images, labels)
        return out

    return write


CifarWriter = Callable[..., dict[str, tuple[np.ndarray, np.ndarray]]]


def _dump_batch(
    path: Path, data: np.ndarray, labels: list[int], protocol: int = 2, str_keys: bool = False
) -> None:
    """A batch as the official files hold it: a dict with bytes keys, pickled."""
    d = {
        b"batch_label": b"testing batch 1 of 1",
        b"labels": labels,
        b"data": data,
        b"filenames": [f"img_{i}.png".encode() for i in range(len(labels))],
    }
    if str_keys:
        d = {k.decode(): v for k, v in d.items()}
    with open(path, "wb") as f:
        pickle.dump(d, f, protocol=protocol)


@pytest.fixture
def dump_batch() -> Callable[..., None]:
    """dump(path, data, labels, protocol=2, str_keys=False): one pickled batch."""
    return _dump_batch


@pytest.fixture
def write_cifar() -> CifarWriter:
    """write(folder, batches={"data_batch_1": 40, "test_batch": 20}, meta=True) → arrays per file."""

    def write(folder: Path, batches: dict[str, int] | None = None, meta: bool = True):
        folder.mkdir(parents=True, exist_ok=True)
        batches = batches or {"data_batch_1": 40, "data_batch_2": 40, "test_batch": 30}
        out = {}
        for i, (name, n) in enumerate(batches.items()):
            images, labels = make_images(n, (3072,), seed=100 + i, offset=2000 * i)
            _dump_batch(folder / name, images, [int(v) for v in labels])
            out[name] = (images, labels.astype(np.int64))
        if meta:
            names = [
                b"airplane",
                b"automobile",
                b"bird",
                b"cat",
                b"deer",
                b"dog",
                b"frog",
                b"horse",
                b"ship",
                b"truck",
            ]
            with open(folder / "batches.meta", "wb") as f:
                pickle.dump(
                    {b"num_cases_per_batch": 40, b"label_names": names, b"num_vis": 3072},
                    f,
                    protocol=2,
                )
        return out

    return write
