"""Write small example data sets in the three "your own data" formats (docs/guide.md#own-data).

    python sample_data/make_own_data.py DIR [--per-class N]

writes, from one seeded set of 16×16 grey images of three classes (horizontal stripes,
vertical stripes, checks, with noise; ``--per-class`` each, default 100):

- ``DIR/shapes.npz``      arrays x [n, 16, 16] uint8 and y [n] (npz:DIR/shapes.npz)
- ``DIR/shapes/``         one PNG sub-folder per class name (folder:DIR/shapes)
- ``DIR/shapes_hf/``      a Hugging Face dataset (save_to_disk) with an Image column and a
                          ClassLabel, when ``datasets`` is installed; else Parquet files with
                          the same columns (hf:DIR/shapes_hf)

The tests build their fixtures with the same functions.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import numpy as np

CLASSES = ("hstripes", "vstripes", "checks")
SIDE = 16


def make_images(per_class: int = 100, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 [3·per_class, 16, 16], labels int64 [3·per_class]), seeded."""
    rng = np.random.default_rng(seed)
    i, j = np.mgrid[0:SIDE, 0:SIDE]
    bases = [(i // 2) % 2, (j // 2) % 2, ((i // 4) + (j // 4)) % 2]
    xs, ys = [], []
    for c, base in enumerate(bases):
        for _ in range(per_class):
            shift = rng.integers(0, 4)
            img = np.roll(base, shift, axis=c % 2) * 180 + rng.normal(40, 25, (SIDE, SIDE))
            xs.append(np.clip(img, 0, 255).astype(np.uint8))
            ys.append(c)
    return np.stack(xs), np.asarray(ys, dtype=np.int64)


def write_npz(path: Path, x: np.ndarray, y: np.ndarray) -> Path:
    """x [n, h, w] and y [n] as ``path`` (.npz, no pickles)."""
    np.savez_compressed(path, x=x, y=y)
    return path


def write_folder(root: Path, x: np.ndarray, y: np.ndarray) -> Path:
    """One PNG per image under ``root/<class name>/``."""
    from PIL import Image

    for k, (img, c) in enumerate(zip(x, y)):
        d = root / CLASSES[int(c)]
        d.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img, mode="L").save(d / f"{k:05d}.png")
    return root


def _png(img: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(img, mode="L").save(buf, format="PNG")
    return buf.getvalue()


def write_hf(root: Path, x: np.ndarray, y: np.ndarray) -> Path:
    """A ``datasets`` save_to_disk folder (Image + ClassLabel features), or, without
    ``datasets``, one Parquet file with the same columns ({bytes, path} images)."""
    try:
        import datasets
    except ImportError:
        import pyarrow as pa
        import pyarrow.parquet as pq

        root.mkdir(parents=True, exist_ok=True)
        table = pa.table(
            {
                "image": [{"bytes": _png(img), "path": None} for img in x],
                "label": [int(c) for c in y],
            }
        )
        pq.write_table(table, root / "train-00000-of-00001.parquet")
        return root
    datasets.disable_progress_bars()
    features = datasets.Features(
        {"image": datasets.Image(), "label": datasets.ClassLabel(names=list(CLASSES))}
    )
    ds = datasets.Dataset.from_dict(
        {"image": [{"bytes": _png(img), "path": None} for img in x], "label": y.tolist()},
        features=features,
    )
    ds.save_to_disk(str(root))
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--per-class", type=int, default=100)
    a = ap.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    x, y = make_images(a.per_class)
    for p in (
        write_npz(a.dir / "shapes.npz", x, y),
        write_folder(a.dir / "shapes", x, y),
        write_hf(a.dir / "shapes_hf", x, y),
    ):
        print(p)


if __name__ == "__main__":
    main()
