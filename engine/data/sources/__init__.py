"""Your own data: ``npz:PATH``, ``folder:PATH`` and ``hf:PATH`` data sources.

A source name is ``<kind>:<path>``; it goes everywhere a built-in name does (``--dataset``,
``spectrum.datasets``, ``malleability data show``) and through the same loader contract:
each source reads whole splits into a :class:`~engine.data.raw.RawData` and
``engine.data.subset.build_dataset`` draws the seeded, class-balanced subset and applies
the docs/protocol.md#preprocessing, exactly as for the built-ins. ``SourceOptions`` carries the
spec's ``data.image_size`` / ``data.mode`` / ``data.image_column`` / ``data.label_column``.

Every source is validated before any work and every failure is one ``DatasetError`` line:
no pickle (``np.load(allow_pickle=False)``, Arrow/Parquet, Pillow), no symlinks leading
out of the folder, a pixel ceiling per image (decompression bombs) and size caps
(``engine.data.sources.limits``).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from engine.data.sources.base import (
    KINDS,
    Source,
    SourceOptions,
    is_source,
    parse_source,
    source_problem,
)

if TYPE_CHECKING:
    from engine.data.raw import RawData


def load_source(name: str, opts: SourceOptions | None = None) -> RawData:
    """Every split of source ``name`` read and validated (before any subsetting).

    Returns RawData with images [N, h, w] (grey) or [N, h, w, 3] (RGB) or [N, d] (flat
    npz), labels [N] int64 0..K-1, ``scale`` such that pixels / scale lie in [0, 1], and
    the class names the source has (folder names, HF ClassLabel names; else "0", "1", …).
    Raises DatasetError, one line, for anything missing, malformed or over a limit.
    """
    src = parse_source(name)
    return _load_cached(src, opts or SourceOptions(), _stamp(src.path))


def _stamp(path: Path) -> tuple[int, ...]:
    """Modification times of ``path`` and its children: a changed source is read again."""
    try:
        st = [path.stat().st_mtime_ns]
        if path.is_dir():
            st += [p.stat().st_mtime_ns for p in path.iterdir()]
        return tuple(st)
    except OSError:
        return ()


@functools.lru_cache(maxsize=4)
def _load_cached(src: Source, opts: SourceOptions, stamp: tuple[int, ...]) -> RawData:
    """One read per source, options and stamp in a process (a run loads it per seed and
    per subset size; the pre-run check once more)."""
    if src.kind == "npz":
        from engine.data.sources.npz import load_npz

        return load_npz(src, opts)
    if src.kind == "folder":
        from engine.data.sources.folder import load_folder

        return load_folder(src, opts)
    from engine.data.sources.hf import load_hf

    return load_hf(src, opts)


__all__ = [
    "KINDS",
    "Source",
    "SourceOptions",
    "is_source",
    "load_source",
    "parse_source",
    "source_problem",
]
