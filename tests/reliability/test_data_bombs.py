"""Decompression bombs, overflowing headers and labels, colliding tar members, killed fetches."""

from __future__ import annotations

import gzip
import io
import os
import pickle
import signal
import struct
import tarfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from reliability_support import invoke, one_line_failure

from engine.data.cifar import MAX_BATCH_BYTES, read_batch
from engine.data.fetch import _part_prefix, fetch, safe_extract
from engine.data.idx import IMAGES_MAGIC, LABELS_MAGIC, read_idx
from engine.errors import DatasetError


def _idx_header(magic: int, *shape: int) -> bytes:
    return struct.pack(">I", magic) + struct.pack(">" + "I" * len(shape), *shape)


def test_gzip_bomb_is_cut_off_at_the_promised_size(tmp_path: Path) -> None:
    p = tmp_path / "t10k-images-idx3-ubyte.gz"
    with gzip.open(p, "wb") as f:  # 10 images promised, 64 MiB of zeros delivered (~64 KB on disk)
        f.write(_idx_header(IMAGES_MAGIC, 10, 28, 28))
        for _ in range(64):
            f.write(bytes(1 << 20))
    assert p.stat().st_size < 1 << 20
    tracemalloc.start()
    with pytest.raises(DatasetError, match="trailing bytes"):
        read_idx(p, magic=IMAGES_MAGIC, dims=(28, 28))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 << 20  # never the 64 MiB the stream would inflate to


@pytest.mark.parametrize("shape", [(2**32 - 1, 28, 28), (400_000, 28, 28)])
def test_header_promising_too_much_is_refused(tmp_path: Path, shape: tuple[int, ...]) -> None:
    p = tmp_path / "train-images-idx3-ubyte.gz"
    p.write_bytes(gzip.compress(_idx_header(IMAGES_MAGIC, *shape)))
    with pytest.raises(DatasetError, match="ceiling"):
        read_idx(p, magic=IMAGES_MAGIC, dims=(28, 28))


def test_huge_dimension_from_the_cli(tmp_path: Path) -> None:
    folder = tmp_path / "mnist"
    folder.mkdir()
    (folder / "t10k-images-idx3-ubyte").write_bytes(_idx_header(IMAGES_MAGIC, 2**32 - 1, 28, 28))
    (folder / "t10k-labels-idx1-ubyte").write_bytes(_idx_header(LABELS_MAGIC, 2**32 - 1))
    assert "ceiling" in one_line_failure(invoke("data", "show", "mnist", "--data-dir", folder))


def _batch(tmp_path: Path, labels: object, n: int = 3) -> Path:
    p = tmp_path / "test_batch"
    with open(p, "wb") as f:
        pickle.dump({b"data": np.zeros((n, 3072), np.uint8), b"labels": labels}, f, protocol=2)
    return p


@pytest.mark.parametrize(
    ("labels", "what"),
    [
        ([0, 2**70, 1], "out of range"),
        ([0.0, 1.7, 2.0], "not an integer"),
        ([[0] * 3] * 3, "not an integer"),
        (np.array([0.5, 1, 2]), "float64 array"),
        ("abc", "str"),
        ([True, 1, 2], "not an integer"),
    ],
)
def test_cifar_labels_overflow_floats_nesting(tmp_path: Path, labels: object, what: str) -> None:
    with pytest.raises(DatasetError, match=what):
        read_batch(_batch(tmp_path, labels))


def test_cifar_batch_over_the_ceiling(tmp_path: Path) -> None:
    p = tmp_path / "data_batch_1"
    with open(p, "wb") as f:  # sparse: no disk space used
        f.truncate(MAX_BATCH_BYTES + 1)
    with pytest.raises(DatasetError, match="ceiling"):
        read_batch(p)


def test_data_show_refuses_float_cifar_labels(tmp_path: Path) -> None:
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    _batch(folder, [0.0, 1.5, 2.0])
    assert "not an integer" in one_line_failure(
        invoke("data", "show", "cifar10", "--data-dir", folder)
    )


def _tar(path: Path, members: list[tuple[str, bytes | None]]) -> Path:
    with tarfile.open(path, "w") as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            if data is None:
                ti.type = tarfile.DIRTYPE
                tf.addfile(ti)
            else:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return path


@pytest.mark.parametrize(
    "members",
    [
        [("x", None), ("x", b"1")],
        [("x", b"1"), ("x/y", b"2")],
        [("x/y", b"2"), ("x", b"1")],
        [("a", b"1"), ("./a", b"2")],
    ],
)
def test_colliding_tar_members_are_refused(tmp_path: Path, members: list) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(DatasetError, match="colliding tar members"):
        safe_extract(_tar(tmp_path / "a.tar", members), dest)
    assert list(dest.iterdir()) == []  # nothing extracted


def test_tar_member_over_an_existing_folder(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    (dest / "data").mkdir(parents=True)
    with pytest.raises(DatasetError, match="would replace the folder"):
        safe_extract(_tar(tmp_path / "a.tar", [("data", b"1")]), dest)


def test_fetch_cleans_parts_of_a_killed_fetch(tmp_path: Path) -> None:
    folder = tmp_path / "mnist"
    folder.mkdir()
    pid = os.fork()
    if pid == 0:  # a fetch killed mid-download: its .part stays behind
        import tempfile

        tempfile.mkstemp(
            dir=folder, prefix=_part_prefix("t10k-images-idx3-ubyte.gz"), suffix=".part"
        )
        os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    assert len(list(folder.glob(".*.part"))) == 1
    live = folder / f"{_part_prefix('other.gz')}abc.part"  # this process's own part is left alone
    live.write_bytes(b"")
    fetch("mnist", tmp_path, files=[], mirrors=[])
    assert list(folder.glob(".*.part")) == [live]
