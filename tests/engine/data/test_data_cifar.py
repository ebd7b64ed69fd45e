"""CIFAR-10 batches through the restricted unpickler, on files the tests write."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from engine.data import dataset_status, find_root, load_dataset, load_raw
from engine.data.cifar import read_batch, safe_unpickle
from engine.errors import DatasetError


class _RunsShell:
    """Unpickling this would run a shell command: the classic pickle exploit."""

    def __init__(self, cmd: str) -> None:
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


class _CallsEval:
    def __reduce__(self):
        return (eval, ("1 + 1",))


def test_batches_load_channel_first_with_meta_names(tmp_path: Path, write_cifar) -> None:
    src = write_cifar(tmp_path / "cifar-10-batches-py")
    raw = load_raw("cifar10", tmp_path)
    assert raw.class_names[1] == "automobile" and raw.image_shape == (3, 32, 32)
    tr, te = raw.splits["train"], raw.splits["test"]
    assert (tr.size, te.size) == (80, 30)
    np.testing.assert_array_equal(
        tr.images.reshape(80, -1), np.concatenate([src["data_batch_1"][0], src["data_batch_2"][0]])
    )
    # row layout R plane, G plane, B plane: pixel (c, i, j) is row[c*1024 + 32 i + j]
    assert tr.images[5, 2, 3, 4] == src["data_batch_1"][0][5, 2 * 1024 + 3 * 32 + 4]
    np.testing.assert_array_equal(te.labels, src["test_batch"][1])


@pytest.mark.parametrize("rel", [".", "cifar-10-batches-py", "cifar10/cifar-10-batches-py"])
def test_root_folder_or_parent(tmp_path: Path, write_cifar, rel: str) -> None:
    folder = tmp_path / "cifar10" / "cifar-10-batches-py"
    write_cifar(folder)
    root = (
        folder
        if rel == "."
        else (tmp_path / "cifar10" if rel == "cifar-10-batches-py" else tmp_path)
    )
    assert find_root("cifar10", root) == folder
    ds = load_dataset("cifar10", root=root, classes=(1, 0), n_train=8, n_test=4, seed=0)
    assert ds.task == "binary" and ds.class_names == ("automobile", "airplane")
    assert ds.x_train.shape == (8, 3072) and ds.notes == ()
    assert set(ds.labels_train[ds.y_train.numpy() > 0]) == {1}


def test_malicious_pickle_is_rejected_without_running(tmp_path: Path, write_cifar) -> None:
    folder = tmp_path / "cifar-10-batches-py"
    write_cifar(folder, {"data_batch_1": 20, "test_batch": 20})
    marker = tmp_path / "pwned"
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": _RunsShell(f"touch {marker}"), b"labels": [0]}, f, protocol=2)
    with pytest.raises(DatasetError) as e:
        load_dataset("cifar10", root=tmp_path, n_train=10, n_test=10, seed=0)
    msg = str(e.value)
    assert str(folder / "test_batch") in msg and f"{os.system.__module__}.system" in msg
    assert "refusing to load" in msg
    assert not marker.exists()
    with open(folder / "data_batch_1", "wb") as f:
        pickle.dump(_CallsEval(), f)
    with pytest.raises(
        DatasetError, match=r"data_batch_1: pickle refers to the global builtins\.eval"
    ):
        read_batch(folder / "data_batch_1")


@pytest.mark.parametrize("protocol,str_keys", [(2, False), (4, True), (5, False)])
def test_other_pickle_protocols_and_str_keys(
    tmp_path: Path, dump_batch, protocol: int, str_keys: bool
) -> None:
    data = np.arange(4 * 3072, dtype=np.uint8).reshape(4, 3072)
    dump_batch(tmp_path / "b", data, [3, 1, 4, 1], protocol=protocol, str_keys=str_keys)
    split = read_batch(tmp_path / "b")
    np.testing.assert_array_equal(split.images.reshape(4, -1), data)
    assert split.labels.tolist() == [3, 1, 4, 1]


def test_bad_batches(tmp_path: Path, dump_batch) -> None:
    p = tmp_path / "test_batch"
    dump_batch(p, np.zeros((3, 3072), np.uint8), [0, 1])
    with pytest.raises(DatasetError, match="3 images but 2 labels"):
        read_batch(p)
    dump_batch(p, np.zeros((3, 100), np.uint8), [0, 1, 2])
    with pytest.raises(
        DatasetError, match=r"b'data' is uint8 array \(3, 100\), expected a uint8 array N×3072"
    ):
        read_batch(p)
    dump_batch(p, np.zeros((2, 3072), np.uint8), [0, 10])
    with pytest.raises(DatasetError, match="label 10 out of range"):
        read_batch(p)
    good = tmp_path / "g"
    dump_batch(good, np.zeros((2, 3072), np.uint8), [0, 1])
    p.write_bytes(good.read_bytes()[:-40])
    with pytest.raises(DatasetError, match="test_batch: not a valid CIFAR-10 pickle batch"):
        safe_unpickle(p)
    with open(p, "wb") as f:
        pickle.dump({b"labels": [1]}, f)
    with pytest.raises(DatasetError, match="without the key b'data'"):
        read_batch(p)


def test_status_reports_sizes(tmp_path: Path, write_cifar) -> None:
    write_cifar(tmp_path / "cifar10", {"data_batch_1": 30, "test_batch": 20})
    st = dataset_status("cifar10", tmp_path)
    assert st.found and st.path == tmp_path / "cifar10"
    assert st.splits == {"train": 30, "test": 20} and not st.complete
