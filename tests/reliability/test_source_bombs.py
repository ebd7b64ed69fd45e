"""Hostile npz:/folder:/hf: sources: each gives one DatasetError line, from the engine and the CLI."""

from __future__ import annotations

import io
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from own_sources import fixtures, needs_pyarrow
from reliability_support import invoke, one_line_failure

from engine.data import load_raw
from engine.errors import DatasetError


def _folder(root: Path, per_class: int = 3) -> Path:
    m = fixtures()
    x, y = m.make_images(per_class)
    return m.write_folder(root / "imgs", x, y)


def _fails(name: str, match: str) -> None:
    """The engine raises DatasetError matching ``match``; ``data show`` and ``headless``
    print it as one line, without a traceback and without creating a run directory."""
    with pytest.raises(DatasetError, match=match):
        load_raw(name)
    line = one_line_failure(invoke("data", "show", name))
    assert line.startswith("error:") and re.search(match, line), line
    out = Path(name.split(":", 1)[1]).parent / "run"
    line = one_line_failure(
        invoke("headless", "--dataset", name, "--experiment", "train", "--quick", "--out", out)
    )
    assert line.startswith("error:") and re.search(match, line), line
    assert not out.exists()


def test_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _fails(f"folder:{tmp_path / 'empty'}", "no class sub-folders")


def test_class_with_one_image(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    for p in sorted((root / "checks").iterdir())[1:]:
        p.unlink()
    _fails(f"folder:{root}", r"class 0 \(checks\) has 1 image")


def test_mixed_sizes_and_modes(tmp_path: Path) -> None:
    from PIL import Image

    root = _folder(tmp_path)
    Image.new("RGB", (16, 16)).save(root / "checks" / "rgb.png")
    _fails(f"folder:{root}", "mixed image sizes or modes")
    (root / "checks" / "rgb.png").unlink()
    Image.new("L", (20, 16)).save(root / "checks" / "wide.png")
    _fails(f"folder:{root}", "mixed image sizes or modes")


def test_palette_image_needs_a_mode(tmp_path: Path) -> None:
    from PIL import Image

    root = _folder(tmp_path)
    Image.new("P", (16, 16)).save(root / "checks" / "pal.png")
    _fails(f"folder:{root}", "image mode P")


def test_truncated_png(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    f = sorted((root / "vstripes").iterdir())[0]
    f.write_bytes(f.read_bytes()[:60])
    _fails(f"folder:{root}", "truncated|not a readable image")


def test_not_an_image(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    (root / "checks" / "notes.txt").write_text("hello")
    _fails(f"folder:{root}", "not a readable image")


def test_symlink_out_of_the_folder(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    secret = tmp_path / "secret.png"
    secret.write_bytes(sorted((root / "checks").iterdir())[0].read_bytes())
    os.symlink(secret, root / "checks" / "link.png")
    _fails(f"folder:{root}", "symlink leading out")
    (root / "checks" / "link.png").unlink()
    os.symlink(tmp_path, root / "outside")  # a whole class folder pointing out
    _fails(f"folder:{root}", "symlink leading out")


def test_decompression_bomb_png_is_not_decoded(tmp_path: Path) -> None:
    from PIL import Image

    root = _folder(tmp_path)
    Image.new("L", (5000, 5000)).save(root / "checks" / "bomb.png")  # ~25 KB on disk
    assert (root / "checks" / "bomb.png").stat().st_size < 1 << 20
    _fails(f"folder:{root}", "over the .* ceiling")


def test_npz_object_array(tmp_path: Path) -> None:
    p = tmp_path / "obj.npz"
    np.savez(p, x=np.array([object()] * 4, dtype=object), y=np.arange(4))
    _fails(f"npz:{p}", "never pickled objects")


def test_npz_header_promising_terabytes(tmp_path: Path) -> None:
    p = tmp_path / "bomb.npz"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("x.npy", _npy_head((10**7, 1000, 1000)))
        zf.writestr("y.npy", _npy_head((10**7,)))
    _fails(f"npz:{p}", "ceiling")


def _npy_head(shape: tuple[int, ...]) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "|u1", "fortran_order": False, "shape": shape}
    )
    return buf.getvalue()  # magic, version and header: no data follows


def test_npz_wrong_arrays_and_not_a_zip(tmp_path: Path) -> None:
    p = tmp_path / "a.npz"
    np.savez(p, images=np.zeros((4, 3), np.uint8), y=np.arange(4))
    _fails(f"npz:{p}", "expected x and y")
    q = tmp_path / "b.npz"
    q.write_bytes(b"not a zip")
    _fails(f"npz:{q}", "not a readable .npz")


def test_parquet_with_the_wrong_column(tmp_path: Path) -> None:
    needs_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "pq"
    root.mkdir()
    pq.write_table(pa.table({"picture": [b"x"] * 4, "label": [0, 1, 0, 1]}), root / "d.parquet")
    _fails(f"hf:{root}", "no image column 'image or img'")


def test_hf_image_given_by_path_only(tmp_path: Path) -> None:
    needs_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "pq"
    root.mkdir()
    imgs = [{"bytes": None, "path": "/etc/passwd"}] * 4
    pq.write_table(pa.table({"image": imgs, "label": [0, 1, 0, 1]}), root / "d.parquet")
    _fails(f"hf:{root}", "holds a path")


def test_malformed_source_names() -> None:
    for name in ("folder:", "npz:/no/such.npz"):
        line = one_line_failure(invoke("data", "show", name))
        assert line.startswith("error:"), line
