"""``npz:FILE``: a NumPy ``.npz`` with ``x`` and ``y`` (or ``x_train``/``y_train`` and
``x_test``/``y_test``), read with ``allow_pickle=False`` after each array's header has been
checked (dtype, shape, bytes) so neither an object array nor a zip bomb is ever inflated."""

from __future__ import annotations

import zipfile

import numpy as np

from engine.data.raw import RawData, RawSplit
from engine.data.sources.base import Source, SourceOptions
from engine.data.sources.common import (
    check_bytes,
    check_count,
    finish,
    image_shape_problem,
    labels_from,
    pixel_scale,
    require_kind,
)
from engine.errors import DatasetError

_LAYOUTS = ((("x", "y"),), (("x_train", "y_train"), ("x_test", "y_test")))


def _headers(path: str, where: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Array name → (shape, dtype) from each member's .npy header, without reading data."""
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(f)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(f)
                out[info.filename[:-4]] = (tuple(shape), dtype)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise DatasetError(f"{where}: not a readable .npz file ({e})") from None
    return out


def load_npz(src: Source, opts: SourceOptions) -> RawData:
    """The .npz at ``src.path`` as RawData: images [N, h, w(, c)] or [N, d], labels [N].

    uint8 pixels are scaled by 255; float pixels must lie in [0, 1] (or [0, 255], then
    scaled by 255). ``opts`` does not apply (the arrays are used as stored).
    """
    where = src.name
    require_kind(src.path, "a regular file", where, "npz: needs a .npz file")
    heads = _headers(str(src.path), where)
    layout = next((lay for lay in _LAYOUTS if all(k in heads for pair in lay for k in pair)), None)
    if layout is None:
        raise DatasetError(
            f"{where}: arrays {', '.join(sorted(heads)) or '(none)'}; expected x and y, "
            "or x_train, y_train, x_test and y_test"
        )
    for key in (k for pair in layout for k in pair):
        shape, dtype = heads[key]
        if dtype.hasobject or dtype.kind not in "biufUS":
            raise DatasetError(
                f"{where}: array {key} has dtype {dtype}; only numbers (and string labels) "
                "are read, never pickled objects"
            )
        if not shape:
            raise DatasetError(f"{where}: array {key} is a scalar")
        check_count(shape[0], where)
        check_bytes(shape, dtype.itemsize, where)
    try:
        with np.load(src.path, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k]) for pair in layout for k in pair}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise DatasetError(f"{where}: cannot read the arrays ({e})") from None
    xs = [arrays[x] for x, _ in layout]
    ys = [arrays[y] for _, y in layout]
    for (xk, yk), x, y in zip(layout, xs, ys):
        problem = image_shape_problem(x.shape[1:]) if x.ndim > 1 else "not images"
        if problem:
            raise DatasetError(
                f"{where}: {xk} of shape {x.shape}: {problem}; "
                "expected [n, d], [n, h, w] or [n, h, w, c≤3]"
            )
        if y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise DatasetError(f"{where}: {yk} of shape {y.shape} for {x.shape[0]} images in {xk}")
    scale = pixel_scale(xs, where)
    codes, names = labels_from(np.concatenate(ys), where)
    splits: dict[str, RawSplit] = {}
    start = 0
    for (xk, _), x in zip(layout, xs):
        n = x.shape[0]
        split = "all" if xk == "x" else xk.split("_")[1]
        images = x[..., 0] if x.ndim == 4 and x.shape[-1] == 1 else x
        splits[split] = RawSplit(images, codes[start : start + n], f"{src.path.name}:{xk}")
        start += n
    return finish(where, splits, names, scale=scale, source=str(src.path))
