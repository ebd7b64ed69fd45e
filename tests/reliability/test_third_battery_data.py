"""The third hostile battery (issue #42), the user's own data: wide-bit-depth images,
array images in hf: sources, empty npz arrays, symlink loops and special files. Each is
read correctly or refused in one line naming what was wrong, never an internal error."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import numpy as np
import pytest
from own_sources import needs_pyarrow
from reliability_support import invoke, one_line_failure

from engine.data import load_raw
from engine.data.sources import SourceOptions, load_source
from engine.errors import DatasetError

RAMP = np.linspace(1000, 34000, 64).reshape(8, 8)
"""A 16-bit grey image: 1000..34000, as a scanner or microscope writes them."""


def _fails(name: str, match: str, *flags: str) -> None:
    """The engine raises DatasetError matching ``match``; ``data show`` and ``headless``
    print it as one line, without a traceback and without creating a run directory."""
    with pytest.raises(DatasetError, match=match):
        load_raw(name)
    line = one_line_failure(invoke("data", "show", name, *flags))
    assert line.startswith("error:") and re.search(match, line), line
    out = Path(name.split(":", 1)[1]).parent / "run"
    line = one_line_failure(
        invoke("headless", "--dataset", name, "--experiment", "train", "--quick", *flags,
               "--out", out)
    )  # fmt: skip
    assert line.startswith("error:") and re.search(match, line), line
    assert not out.exists()


def _wide_folder(root: Path, mode: str) -> tuple[Path, np.ndarray]:
    """Two classes of three wide-mode images each; (folder, the pixels as written [6, 8, 8])."""
    from PIL import Image

    written = []
    for c in ("a", "b"):
        (root / c).mkdir(parents=True)
        for i in range(3):
            a = RAMP + 500 * i + (2000 if c == "b" else 0)
            if mode == "F":
                a = a / 65535.0
            dtype = {"I;16": np.uint16, "I;16B": ">u2", "I": np.int32, "F": np.float32}[mode]
            stored = a.astype(dtype)
            im = Image.fromarray(stored)
            assert im.mode == mode
            im.save(root / c / f"{i}.{'png' if mode == 'I;16' else 'tiff'}")
            written.append(stored.astype(np.float64))
    return root, np.stack(written)


@pytest.mark.parametrize("mode", ["I;16", "I;16B", "I", "F"])
def test_wide_grey_images_keep_their_values_under_mode_L(tmp_path: Path, mode: str) -> None:
    """Pillow's convert("L") clips 16-bit pixels at 255: every image was white."""
    root, written = _wide_folder(tmp_path / "wide", mode)
    raw = load_source(f"folder:{root}", SourceOptions(mode="L"))
    x = raw.splits["all"].images
    unit = written / (1.0 if mode == "F" else 65535.0)  # each image on [0, 1]
    assert x.dtype == np.uint8 and raw.scale == 255.0
    assert np.array_equal(x, np.rint(unit * 255).astype(np.uint8))
    assert len({im.tobytes() for im in x}) == 6  # six different images, not one white one
    rgb = load_source(f"folder:{root}", SourceOptions(mode="RGB")).splits["all"].images
    assert np.array_equal(rgb[..., 0], x) and np.array_equal(rgb[..., 2], x)


def test_a_wide_image_of_unknown_range_is_refused(tmp_path: Path) -> None:
    from PIL import Image

    root, _ = _wide_folder(tmp_path / "wide", "I")
    Image.fromarray((RAMP - 5000).astype(np.int32)).save(root / "a" / "neg.tiff")
    _fails(
        f"folder:{root}",
        r"neg\.tiff: I image with pixels in \[-4000, 29000\]; expected",
        "--mode",
        "L",
    )
    (root / "a" / "neg.tiff").unlink()
    Image.fromarray(np.full((8, 8), np.nan, np.float32)).save(root / "a" / "nan.tiff")
    _fails(
        f"folder:{root}", r"nan\.tiff: float image .*expected \[0, 1\] or \[0, 255\]", "--mode", "L"
    )


def _hf_arrays(root: Path, images: list) -> str:
    needs_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True)
    labels = [i % 2 for i in range(len(images))]
    pq.write_table(pa.table({"image": images, "label": labels}), root / "data.parquet")
    return f"hf:{root}"


def _arrays(fill, n: int = 6, shape: tuple[int, ...] = (4, 4)) -> list:
    return [np.full(shape, fill).tolist() for _ in range(n)]


@pytest.mark.parametrize(
    ("images", "match"),
    [
        (_arrays(np.nan), r"pixels in \[nan, nan\]; expected \[0, 1\] or \[0, 255\]"),
        (_arrays(-0.5), r"pixels in \[-0.5, -0.5\]; expected \[0, 1\] or \[0, 255\]"),
        (_arrays(60000), r"integer pixels in \[60000, 60000\]; expected 0..255"),
        (_arrays(-3), r"integer pixels in \[-3, -3\]; expected 0..255"),
        (_arrays(7, shape=(4, 4, 7)), "images with 7 channels; expected 1 .grey. or 3 .RGB."),
        (_arrays(7, shape=(4, 0)), r"images of shape \(4, 0\) hold no pixels"),
        (_arrays(7, shape=(2, 2, 2, 2)), r"an image of shape \(2, 2, 2, 2\); expected"),
        ([[[1, 2], [3]]] * 6, "rows of pixels of different lengths"),
        ([[1, 2], [3]] * 3, r"mixed image sizes or modes: .* is 2 values, .* is 1 values"),
    ],
    ids=["nan", "neg", "int-60000", "int-neg", "7-channels", "no-pixels", "4d", "ragged", "mixed"],
)
def test_hf_array_images_get_the_npz_pixel_checks(tmp_path: Path, images, match) -> None:
    _fails(_hf_arrays(tmp_path / "hf", images), match)


def test_hf_array_images_that_are_fine_are_read_as_stored(tmp_path: Path) -> None:
    x = np.random.default_rng(0).random((6, 4, 4, 1))
    raw = load_raw(_hf_arrays(tmp_path / "hf", [a.tolist() for a in x]))
    assert raw.scale == 1.0 and np.array_equal(raw.splits["all"].images, x[..., 0])


@pytest.mark.parametrize(
    ("shape", "match"),
    [
        ((0, 8, 8), r"an image array of shape \(0, 8, 8\) holds no images"),
        ((20, 0), r"x of shape \(20, 0\): images of shape \(0,\) hold no pixels"),
        ((20, 8, 0), r"x of shape \(20, 8, 0\): images of shape \(8, 0\) hold no pixels"),
        ((20,), r"x of shape \(20,\): not images"),
    ],
)
def test_npz_without_images_or_pixels(tmp_path: Path, shape, match) -> None:
    path = tmp_path / "empty.npz"
    np.savez(path, x=np.zeros(shape, np.uint8), y=np.arange(shape[0]) % 2)
    _fails(f"npz:{path}", match)


def _two_classes(root: Path) -> Path:
    from PIL import Image

    for c in ("a", "b"):
        (root / c).mkdir(parents=True)
        for i in range(2):
            Image.new("L", (4, 4), 40 * i).save(root / c / f"{i}.png")
    return root


def test_symlink_loops_in_a_class_folder_are_named(tmp_path: Path) -> None:
    root = _two_classes(tmp_path / "d")
    os.symlink("loop.png", root / "a" / "loop.png")
    _fails(f"folder:{root}", r"a/loop\.png: a symlink loop that cannot be resolved")
    (root / "a" / "loop.png").unlink()
    os.symlink("y.png", root / "b" / "x.png")
    os.symlink("x.png", root / "b" / "y.png")
    _fails(f"folder:{root}", r"b/x\.png: a symlink loop")
    for p in ("x.png", "y.png"):
        (root / "b" / p).unlink()
    os.symlink("c", root / "c")  # beside the class folders
    _fails(f"folder:{root}", r"/c: a symlink loop")


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda p: os.symlink(p.parent / "gone.png", p), "a dangling symlink"),
        (os.mkfifo, "a FIFO"),
        (lambda p: socket.socket(socket.AF_UNIX).bind(str(p)), "a socket"),
        (os.mkdir, "a folder"),
    ],
    ids=["dangling", "fifo", "socket", "folder"],
)
def test_special_files_in_a_class_folder_say_what_they_are(tmp_path: Path, make, what) -> None:
    root = _two_classes(tmp_path / "d")
    make(root / "a" / "zzz.png")
    _fails(f"folder:{root}", rf"a/zzz\.png is {what}; a class folder holds image files only")


def test_npz_and_hf_names_say_what_the_path_is(tmp_path: Path) -> None:
    (tmp_path / "dir.npz").mkdir()
    _fails(f"npz:{tmp_path / 'dir.npz'}", r"dir\.npz is a folder; npz: needs a \.npz file")
    line = one_line_failure(invoke("data", "show", "npz:/dev/zero"))
    assert "/dev/zero is a character device; npz: needs a .npz file" in line, line
    os.symlink(tmp_path / "gone.npz", tmp_path / "link.npz")
    _fails(f"npz:{tmp_path / 'link.npz'}", r"link\.npz is a dangling symlink")
    os.mkfifo(tmp_path / "fifo.npz")
    _fails(f"npz:{tmp_path / 'fifo.npz'}", r"fifo\.npz is a FIFO")
    (tmp_path / "file").write_text("x")
    _fails(f"hf:{tmp_path / 'file'}", "file is a regular file; hf: needs a save_to_disk")
    _fails(f"folder:{tmp_path / 'file'}", "file is a regular file; folder: needs a folder")


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (os.mkfifo, "a FIFO"),
        (lambda p: os.symlink(p.parent / "gone.parquet", p), "a dangling symlink"),
    ],
    ids=["fifo", "dangling"],
)
def test_special_files_among_hf_parquet_files_are_refused(tmp_path: Path, make, what) -> None:
    name = _hf_arrays(tmp_path / "hf", _arrays(7))
    make(tmp_path / "hf" / "more.parquet")  # a FIFO blocked the Arrow reader for good
    res = _within_s(20, lambda: load_raw(name))
    assert isinstance(res, DatasetError) and f"more.parquet is {what}; hf: reads regular" in str(
        res
    )
    line = one_line_failure(invoke("data", "show", name))
    assert f"more.parquet is {what}" in line


def _within_s(seconds: float, call):
    """``call()``'s result or exception, from a thread that must end within ``seconds``."""
    import threading

    box: list = []

    def run() -> None:
        try:
            box.append(call())
        except Exception as e:  # noqa: BLE001 - the test inspects it
            box.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert box, f"still running after {seconds} s"
    return box[0]
