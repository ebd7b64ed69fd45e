"""What every source shares: size caps, safe paths, Pillow decoding, the class checks.

The ceilings are documented constants: a real small data set is far below them, and a
hostile file (a decompression bomb, a header promising terabytes) is refused before the
memory is allocated.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from engine.data.raw import RawData, RawSplit
from engine.errors import DatasetError
from engine.files import kind_of

MAX_IMAGE_PIXELS = 4096 * 4096
"""Pixels one image may declare (width × height) before it is decoded."""
MAX_IMAGES = 500_000
"""Images (rows) one source may hold."""
MAX_ARRAY_BYTES = 2 << 30
"""Bytes the decoded images of one source (or one npz array) may take."""
MAX_FILE_BYTES = 64 << 20
"""Bytes one image file may have on disk."""
MODES = ("L", "RGB")


def require_kind(path: Path, want: str, where: str, needs: str) -> None:
    """DatasetError unless ``path`` is ``want`` ("a regular file" or "a folder"): "no such
    file/folder" when nothing is there, else what it is (``kind_of``) and ``needs``."""
    kind = kind_of(path)
    if kind == want:
        return
    if kind == "missing":
        raise DatasetError(f"{where}: no such {'folder' if want == 'a folder' else 'file'}")
    raise DatasetError(f"{where}: {path} is {kind}; {needs}")


def inside(root: Path, path: Path, what: str) -> Path:
    """``path`` resolved, refused (DatasetError) when it leads out of ``root`` (a symlink)
    or cannot be resolved (a symlink loop)."""
    try:
        real, base = path.resolve(), root.resolve()
    except (RuntimeError, OSError):  # RuntimeError: "Symlink loop" (Python < 3.13)
        raise DatasetError(
            f"{path}: {kind_of(path)} that cannot be resolved; refusing it"
        ) from None
    if real != base and base not in real.parents:
        raise DatasetError(f"{path}: a symlink leading out of the {what} ({real}); refusing it")
    return real


def decode_image(
    data: bytes | str | os.PathLike, origin: str, size: int | None, mode: str | None
) -> np.ndarray:
    """One image file (a path or its bytes) → uint8 [h, w] (L) or [h, w, 3] (RGB).

    The declared size is checked against ``MAX_IMAGE_PIXELS`` before decoding; a
    truncated or unreadable file, or a mode other than L / RGB when ``mode`` is None, is a
    DatasetError naming ``origin``. ``size``: resize to size × size; ``mode``: convert.
    """
    from PIL import Image, UnidentifiedImageError

    fp: Any = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        with Image.open(fp) as opened:
            im: Image.Image = opened
            w, h = im.size
            if w * h > MAX_IMAGE_PIXELS:
                raise DatasetError(
                    f"{origin}: image declares {w}×{h} = {w * h:,} pixels, over the "
                    f"{MAX_IMAGE_PIXELS:,} ceiling (a decompression bomb?); refusing to decode it"
                )
            im.load()
            if im.mode in WIDE_MODES or im.mode.startswith("I;16"):
                im = Image.fromarray(_eight_bit(np.asarray(im), im.mode, origin), mode="L")
            if mode is not None:
                im = im.convert(mode)
            elif im.mode not in MODES:
                raise DatasetError(
                    f"{origin}: image mode {im.mode}; set data.mode (--mode L or RGB) to convert"
                )
            if size is not None and im.size != (size, size):
                im = im.resize((size, size), Image.Resampling.BILINEAR)
            return np.asarray(im, dtype=np.uint8)
    except DatasetError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError) as e:
        raise DatasetError(f"{origin}: not a readable image ({e})") from None
    except (OSError, ValueError, SyntaxError) as e:  # truncated or corrupt data
        raise DatasetError(f"{origin}: unreadable or truncated image ({e})") from None


WIDE_MODES = ("I", "F")
"""Pillow modes wider than 8 bits a pixel (besides the ``I;16*`` family): 16-bit grey
PNGs and TIFFs, 32-bit integer and float images. Pillow's own ``convert("L")`` clips
them at 255 (every pixel of a typical 16-bit image becomes white), so they are scaled
here, by their bit depth, to 0..255 (docs/guide.md#own-data)."""


def _eight_bit(a: np.ndarray, mode: str, origin: str) -> np.ndarray:
    """Pixels of a wide Pillow mode [h, w] → uint8 [h, w] on the same unit range.

    16-bit (``I;16*``, or ``I`` holding 0..65535): ×255/65535; float (``F``) in [0, 1]:
    ×255, in [0, 255]: as is. Anything else (negative, NaN, over 16 bits) is refused:
    its range is unknown, and a guessed one would train on other images than the file's.
    """
    x = a.astype(np.float64)
    lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
    if mode == "F":
        if np.isfinite(lo) and np.isfinite(hi) and lo >= 0 and hi <= 255:
            x = x * 255.0 if hi <= 1.0 else x
        else:
            raise DatasetError(
                f"{origin}: float image with pixels in [{lo:g}, {hi:g}]; "
                "expected [0, 1] or [0, 255]"
            )
    elif 0 <= lo and hi <= 65535:
        x = x * (255.0 / 65535.0)
    else:
        raise DatasetError(
            f"{origin}: {mode} image with pixels in [{lo:g}, {hi:g}]; "
            "expected 8-bit, or 16-bit 0..65535"
        )
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def stack_images(images: Sequence[np.ndarray], origins: Sequence[str], where: str) -> np.ndarray:
    """Decoded images → one uint8 array [N, h, w(, 3)]; mixed sizes or modes → DatasetError
    naming two files that differ and the options that would make them agree."""
    if not images:
        raise DatasetError(f"{where}: no images")
    first = images[0].shape
    for im, origin in zip(images, origins):
        if im.shape != first:
            raise DatasetError(
                f"{where}: mixed image sizes or modes: {origins[0]} is {_shape_text(first)}, "
                f"{origin} is {_shape_text(im.shape)}; set data.image_size and data.mode "
                "(--image-size N --mode L|RGB) to convert them all"
            )
    return np.stack(images)


def _shape_text(shape: tuple[int, ...]) -> str:
    if len(shape) == 1:  # a flat array image (npz:, hf:)
        return f"{shape[0]} values"
    kind = "RGB" if len(shape) == 3 else "L"
    return f"{shape[1]}×{shape[0]} {kind}"


def image_shape_problem(shape: tuple[int, ...]) -> str | None:
    """Why one stored image of ``shape`` ([d], [h, w] or [h, w, c]) cannot be used, or None:
    no pixels, or a channel count other than 1 or 3 (grey or RGB)."""
    if len(shape) not in (1, 2, 3):
        return f"an image of shape {shape}; expected [d], [h, w] or [h, w, c≤3]"
    if 0 in shape:
        return f"images of shape {shape} hold no pixels"
    if len(shape) == 3 and shape[-1] not in (1, 3):
        return f"images with {shape[-1]} channels; expected 1 (grey) or 3 (RGB)"
    return None


def pixel_scale(xs: Sequence[np.ndarray], where: str) -> float:
    """The ``scale`` of stored pixel arrays (npz: and hf: array images, [N, ...] each):
    255 for integers in 0..255; for floats 1 (all in [0, 1]) or 255 (in [0, 255]).

    The one pixel check of array sources: no images, no pixels, non-numbers, NaN or
    infinity, negative values and integers over 255 are each a DatasetError, so a source
    never trains on data other than what it holds.
    """
    for x in xs:
        if x.shape[0] == 0:
            raise DatasetError(f"{where}: an image array of shape {x.shape} holds no images")
        if x.size == 0:
            raise DatasetError(f"{where}: images of shape {x.shape[1:]} hold no pixels")
        if x.dtype.kind not in "biuf":
            raise DatasetError(f"{where}: pixels of dtype {x.dtype}; expected numbers")
    if all(x.dtype.kind in "biu" for x in xs):
        ilo, ihi = min(int(x.min()) for x in xs), max(int(x.max()) for x in xs)
        if ilo < 0 or ihi > 255:
            raise DatasetError(f"{where}: integer pixels in [{ilo}, {ihi}]; expected 0..255")
        return 255.0
    lo = min(float(x.min()) for x in xs)
    hi = max(float(x.max()) for x in xs)
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo < 0 or hi > 255:
        raise DatasetError(f"{where}: pixels in [{lo}, {hi}]; expected [0, 1] or [0, 255]")
    return 1.0 if hi <= 1.0 else 255.0


def check_count(n: int, where: str) -> None:
    """Refuse a source with more than ``MAX_IMAGES`` rows before reading them."""
    if n > MAX_IMAGES:
        raise DatasetError(f"{where}: {n:,} images, over the {MAX_IMAGES:,} ceiling of a source")


def check_bytes(shape: tuple[int, ...], itemsize: int, where: str) -> None:
    """Refuse an array whose shape promises more than ``MAX_ARRAY_BYTES``."""
    need = math.prod(shape) * itemsize  # Python ints: no overflow
    if need > MAX_ARRAY_BYTES:
        raise DatasetError(
            f"{where}: {'×'.join(map(str, shape))} array = {need:,} bytes, over the "
            f"{MAX_ARRAY_BYTES >> 30} GiB ceiling of a source; refusing to read it"
        )


def check_file_size(path: Path, origin: str) -> None:
    """Refuse an image file over ``MAX_FILE_BYTES`` on disk."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise DatasetError(
            f"{origin}: {size:,} bytes, over the {MAX_FILE_BYTES >> 20} MiB ceiling of one image file"
        )


def open_limited(path: Path) -> IO[bytes]:
    """``path`` opened for reading (its size checked first)."""
    check_file_size(path, str(path))
    return open(path, "rb")


def finish(
    name: str,
    splits: dict[str, RawSplit],
    class_names: Sequence[str],
    *,
    scale: float,
    source: str,
    notes: tuple[str, ...] = (),
) -> RawData:
    """RawData for a source, after the checks every source shares: labels 0..K-1, at
    least two classes, each with two or more images (one train, one test), and one image
    shape across the splits."""
    k = len(class_names)
    if k < 2:
        raise DatasetError(f"{name}: {k} class found; a source needs two or more")
    shapes = {sp.images.shape[1:] for sp in splits.values()}
    if len(shapes) > 1:
        raise DatasetError(
            f"{name}: the splits have different image shapes ({', '.join(map(str, shapes))})"
        )
    for split, sp in splits.items():
        counts = np.bincount(sp.labels, minlength=k)
        for c, have in enumerate(counts):
            need = 1 if len(splits) > 1 else 2
            if have < need:
                extra = "" if len(splits) > 1 else " (one for train, one for test)"
                raise DatasetError(
                    f"{name}: class {c} ({class_names[c]}) has {have} image(s) in the {split} "
                    f"split; every class needs at least {need}{extra}"
                )
    image_shape = tuple(int(s) for s in next(iter(shapes)))
    return RawData(
        name=name,
        splits=splits,
        class_names=tuple(str(c) for c in class_names),
        image_shape=image_shape,
        scale=scale,
        source=source,
        notes=notes,
    )


def labels_from(values: np.ndarray, where: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """Integer or string labels [N] → (int64 codes 0..K-1 [N], class names).

    Integer labels keep their values as codes when they are 0..K-1 (names "0", "1", …);
    other integers and strings are coded in sorted order and named by their value.
    """
    v = np.asarray(values)
    if v.ndim != 1:
        raise DatasetError(f"{where}: labels of shape {v.shape}, expected one label per image")
    if v.dtype.kind in "iu":
        if v.size and v.min() >= 0 and v.max() < max(2 * v.size, 1 << 16):
            k = int(v.max()) + 1
            present = np.unique(v)
            if present.size == k:
                return v.astype(np.int64), tuple(str(i) for i in range(k))
        uniq, codes = np.unique(v, return_inverse=True)
        return codes.astype(np.int64), tuple(str(u) for u in uniq)
    if v.dtype.kind == "f":
        if not (np.all(np.isfinite(v)) and np.all(v == np.round(v))):
            raise DatasetError(f"{where}: float labels that are not whole numbers")
        return labels_from(v.astype(np.int64), where)
    if v.dtype.kind in "UST":
        uniq, codes = np.unique(v.astype(str), return_inverse=True)
        return codes.astype(np.int64), tuple(str(u) for u in uniq)
    raise DatasetError(f"{where}: labels of dtype {v.dtype}; integers or strings expected")
