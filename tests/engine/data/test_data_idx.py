"""IDX parsing and the MNIST / Fashion-MNIST loaders on files the tests write."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.data import load_dataset, load_raw
from engine.data.idx import IMAGES_MAGIC, LABELS_MAGIC, idx_count, read_idx, write_idx
from engine.errors import DatasetError


@pytest.mark.parametrize("gz", [True, False])
def test_idx_round_trip(tmp_path: Path, gz: bool) -> None:
    arr = np.random.default_rng(0).integers(0, 256, (7, 28, 28), dtype=np.uint8)
    p = tmp_path / ("x.gz" if gz else "x")
    write_idx(p, arr)
    assert (p.read_bytes()[:2] == b"\x1f\x8b") is gz
    np.testing.assert_array_equal(read_idx(p, magic=IMAGES_MAGIC, dims=(28, 28)), arr)
    assert idx_count(p, IMAGES_MAGIC) == 7


def _raw_idx(tmp_path: Path, arr: np.ndarray) -> bytes:
    p = tmp_path / "tmp.idx"
    write_idx(p, arr, compress=False)
    return p.read_bytes()


def test_wrong_magic_names_file_and_expected(tmp_path: Path) -> None:
    p = tmp_path / "train-images-idx3-ubyte"
    write_idx(p, np.zeros(5, dtype=np.uint8))  # a labels file (2049) where images are expected
    with pytest.raises(DatasetError) as e:
        read_idx(p, magic=IMAGES_MAGIC, dims=(28, 28))
    msg = str(e.value)
    assert str(p) in msg and "2049" in msg and "expected 2051" in msg


def test_truncated_and_trailing_bytes(tmp_path: Path) -> None:
    data = _raw_idx(tmp_path, np.ones((4, 28, 28), dtype=np.uint8))
    p = tmp_path / "t.idx"
    p.write_bytes(data[:-10])
    with pytest.raises(
        DatasetError,
        match=r"truncated IDX images file: header says 4×28×28 = 3136 data bytes, found 3126",
    ):
        read_idx(p, magic=IMAGES_MAGIC, dims=(28, 28))
    p.write_bytes(data + b"xx")
    with pytest.raises(DatasetError, match="trailing bytes"):
        read_idx(p, magic=IMAGES_MAGIC, dims=(28, 28))
    p.write_bytes(data[:6])
    with pytest.raises(DatasetError, match="header needs 16 bytes"):
        read_idx(p, magic=IMAGES_MAGIC, dims=(28, 28))


def test_wrong_image_dims(tmp_path: Path) -> None:
    p = tmp_path / "i.gz"
    write_idx(p, np.zeros((3, 27, 28), dtype=np.uint8))
    with pytest.raises(DatasetError, match=r"shape 27×28, expected 28×28"):
        read_idx(p, magic=IMAGES_MAGIC, dims=(28, 28))


def test_corrupt_gzip(tmp_path: Path) -> None:
    p = tmp_path / "l.gz"
    write_idx(p, np.arange(200, dtype=np.uint8) % 10)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=r"l\.gz: corrupt gzip file"):
        read_idx(p, magic=LABELS_MAGIC)
    bad_crc = bytearray(data)
    bad_crc[-8] ^= 0xFF  # the CRC32 of the trailer
    p.write_bytes(bytes(bad_crc))
    with pytest.raises(DatasetError, match="corrupt gzip"):
        read_idx(p, magic=LABELS_MAGIC)


def test_mnist_both_splits_draw_train_from_train(tmp_path: Path, write_idx_set) -> None:
    src = write_idx_set(tmp_path / "mnist", train=60, test=30)
    ds = load_dataset("mnist", root=tmp_path, n_train=20, n_test=10, seed=3)
    assert ds.notes == ()
    assert ds.x_train.dtype == torch.float64 and ds.x_train.shape == (20, 784)
    train_rows = {r.tobytes() for r in src["train"][0].reshape(60, -1)}
    test_rows = {r.tobytes() for r in src["test"][0].reshape(30, -1)}
    got_tr = (ds.x_train_raw.numpy() * 255).round().astype(np.uint8)
    got_te = (ds.x_test_raw.numpy() * 255).round().astype(np.uint8)
    assert all(r.tobytes() in train_rows for r in got_tr)
    assert all(r.tobytes() in test_rows for r in got_te)
    # preprocessing: raw pixels are exactly k/255, normalised rows have unit norm
    np.testing.assert_allclose(ds.x_train_raw.numpy() * 255, got_tr, atol=1e-9)
    np.testing.assert_allclose(ds.x_train.norm(dim=1).numpy(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(
        ds.x_train.numpy(),
        ds.x_train_raw.numpy() / np.linalg.norm(ds.x_train_raw.numpy(), axis=1, keepdims=True),
    )
    assert ds.task == "multiclass" and ds.classes == tuple(range(10)) and ds.n_out == 10
    assert np.bincount(ds.labels_train, minlength=10).tolist() == [2] * 10


@pytest.mark.parametrize("where", ["parent", "folder"])
def test_root_may_be_the_folder_or_its_parent(tmp_path: Path, write_idx_set, where: str) -> None:
    write_idx_set(tmp_path / "fashion-mnist", train=20, test=20, gz=False)
    root = tmp_path if where == "parent" else tmp_path / "fashion-mnist"
    ds = load_dataset("fashion-mnist", root=root, classes=(9, 0), n_train=4, n_test=2, seed=0)
    assert ds.class_names == ("Ankle boot", "T-shirt/top")
    assert ds.source == str(tmp_path / "fashion-mnist")


def test_only_test_split_gives_a_note_and_disjoint_subsets(tmp_path: Path, write_idx_set) -> None:
    write_idx_set(tmp_path, train=None, test=100)
    ds = load_dataset("mnist", root=tmp_path, n_train=40, n_test=20, seed=1)
    (note,) = ds.notes
    assert note.startswith(
        "mnist: only the test split (t10k-images-idx3-ubyte.gz, 100 images) found in"
    )
    assert "disjoint seeded draws" in note
    tr = {r.tobytes() for r in ds.x_train_raw.numpy()}
    te = {r.tobytes() for r in ds.x_test_raw.numpy()}
    assert len(tr) == 40 and len(te) == 20 and not tr & te


def test_missing_half_of_a_split_and_count_mismatch(tmp_path: Path, write_idx_set) -> None:
    write_idx_set(tmp_path, train=20, test=20)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(
        DatasetError, match=r"found t10k-images-idx3-ubyte\.gz but not t10k-labels-idx1-ubyte"
    ):
        load_raw("mnist", tmp_path)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(19, dtype=np.uint8))
    with pytest.raises(
        DatasetError, match="holds 20 images but t10k-labels-idx1-ubyte.gz holds 19 labels"
    ):
        load_raw("mnist", tmp_path)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.full(20, 12, dtype=np.uint8))
    with pytest.raises(DatasetError, match=r"label 12 out of range, expected 0\.\.9"):
        load_raw("mnist", tmp_path)


def test_gzip_detected_by_content_not_name(tmp_path: Path, write_idx_set) -> None:
    src = write_idx_set(tmp_path, train=None, test=20, gz=True)
    for f in tmp_path.glob("*.gz"):  # a browser that saved gzip data without the suffix
        f.rename(f.with_suffix(""))
    raw = load_raw("mnist", tmp_path)
    np.testing.assert_array_equal(raw.splits["test"].images, src["test"][0])
    plain = gzip.decompress((tmp_path / "t10k-labels-idx1-ubyte").read_bytes())
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(plain)
    assert load_raw("mnist", tmp_path).splits["test"].size == 20
