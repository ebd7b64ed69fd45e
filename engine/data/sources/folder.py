"""``folder:DIR``: an image folder, one sub-folder per class (torchvision ImageFolder
convention), with ``train/`` and ``test/`` sub-folders used when both are present.

Class names are the sub-folder names, sorted (their index is the class label); every
non-hidden file in a class folder must be an image Pillow reads. Symlinks leading out of
DIR are refused; image sizes are checked before decoding (``common.decode_image``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.data.raw import RawData, RawSplit
from engine.data.sources.base import Source, SourceOptions
from engine.data.sources.common import (
    check_bytes,
    check_count,
    check_file_size,
    decode_image,
    finish,
    inside,
    require_kind,
    stack_images,
)
from engine.errors import DatasetError
from engine.files import kind_of


def _visible(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def class_files(root: Path, folder: Path, where: str) -> dict[str, list[Path]]:
    """Class name → its image files (sorted), for one split folder; validated layout."""
    subs = _visible(folder)
    stray = [p.name for p in subs if kind_of(inside(root, p, "data folder")) != "a folder"]
    if stray:
        raise DatasetError(
            f"{where}: {folder} holds files ({', '.join(stray[:3])}) beside the class folders; "
            "expected one sub-folder per class"
        )
    if not subs:
        raise DatasetError(f"{where}: {folder} has no class sub-folders (one per class expected)")
    out: dict[str, list[Path]] = {}
    for sub in subs:
        files = _visible(sub)
        for f in files:
            inside(root, f, "data folder")
            if (kind := kind_of(f)) != "a regular file":
                raise DatasetError(f"{where}: {f} is {kind}; a class folder holds image files only")
        if not files:
            raise DatasetError(f"{where}: class folder {sub} holds no images")
        out[sub.name] = files
    return out


def load_folder(src: Source, opts: SourceOptions) -> RawData:
    """The image folder at ``src.path`` as RawData: images uint8 [N, h, w] (L) or
    [N, h, w, 3] (RGB) at ``opts.image_size`` / ``opts.mode`` (or as found, all alike),
    labels [N] int64 (index of the class folder name), scale 255."""
    where, root = src.name, src.path
    require_kind(root, "a folder", where, "folder: needs a folder of class folders")
    split_dirs = {"train": root / "train", "test": root / "test"}
    if all(d.is_dir() for d in split_dirs.values()):
        layout = {s: class_files(root, d, where) for s, d in split_dirs.items()}
        if set(layout["train"]) != set(layout["test"]):
            raise DatasetError(
                f"{where}: train/ and test/ have different class folders "
                f"({', '.join(sorted(layout['train']))} vs {', '.join(sorted(layout['test']))})"
            )
    else:
        layout = {"all": class_files(root, root, where)}
    names = sorted(next(iter(layout.values())))
    index = {n: i for i, n in enumerate(names)}
    check_count(sum(len(fs) for cl in layout.values() for fs in cl.values()), where)
    splits: dict[str, RawSplit] = {}
    for split, classes in layout.items():
        images: list[np.ndarray] = []
        origins: list[str] = []
        labels: list[int] = []
        for cname, files in classes.items():
            for f in files:
                origin = str(f.relative_to(root))
                check_file_size(f, origin)
                images.append(decode_image(f, origin, opts.image_size, opts.mode))
                origins.append(origin)
                labels.append(index[cname])
                if len(images) == 1:
                    check_bytes((sum(map(len, classes.values())), *images[0].shape), 1, where)
        splits[split] = RawSplit(
            stack_images(images, origins, where),
            np.asarray(labels, dtype=np.int64),
            f"{split}/" if split != "all" else str(root),
        )
    return finish(where, splits, names, scale=255.0, source=str(root))
