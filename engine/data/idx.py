"""IDX files (MNIST, Fashion-MNIST), gzipped or not, validated against their header."""

from __future__ import annotations

import gzip
import io
import math
import struct
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from engine.errors import DatasetError

if TYPE_CHECKING:  # numpy loads where arrays are read or written: `data list` reads headers only
    import numpy as np

IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dimensions
LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dimension
_GZIP_MAGIC = b"\x1f\x8b"


# A header promising more than this is refused before anything is inflated: the largest
# real IDX file here (MNIST / Fashion-MNIST train images, 60000×28×28) is 47 MB, so the
# ceiling is ~5× that; memory use is bounded by the header's promise, never by what a
# (possibly malicious) gzip stream would inflate to.
MAX_IDX_BYTES = 256 << 20


def _read_header(
    f: BinaryIO, path: Path | str, magic: int, dims: tuple[int | None, ...]
) -> tuple[tuple[int, ...], int]:
    """(shape, data bytes the header promises), validated against ``magic``, ``dims`` and the ceiling."""
    what = "images" if magic == IMAGES_MAGIC else "labels"
    head = f.read(4)
    if len(head) < 4:
        raise DatasetError(f"{path}: truncated IDX {what} file ({len(head)} bytes, no header)")
    got = int.from_bytes(head, "big")
    if got != magic:
        raise DatasetError(
            f"{path}: not an IDX {what} file: magic number {got} (0x{got:08x}), "
            f"expected {magic} (0x{magic:08x})"
        )
    ndim = magic & 0xFF
    rest = f.read(4 * ndim)
    if len(rest) < 4 * ndim:
        raise DatasetError(f"{path}: truncated IDX {what} file: header needs {4 + 4 * ndim} bytes")
    shape = struct.unpack(">" + "I" * ndim, rest)
    for i, (want, have) in enumerate(zip(dims, shape[1:])):
        if want is not None and want != have:
            exp = "×".join("?" if d is None else str(d) for d in dims)
            raise DatasetError(
                f"{path}: {what} of shape {'×'.join(map(str, shape[1:]))}, expected {exp} "
                f"(dimension {i + 2})"
            )
    need = math.prod(shape)  # Python ints: no overflow whatever the header says
    if need > MAX_IDX_BYTES:
        raise DatasetError(
            f"{path}: IDX header promises {'×'.join(map(str, shape))} = {need:,} bytes, over the "
            f"{MAX_IDX_BYTES >> 20} MiB ceiling; refusing to read it (not an MNIST-style file)"
        )
    return shape, need


def _read_stream(
    f: BinaryIO, path: Path | str, magic: int, dims: tuple[int | None, ...]
) -> np.ndarray:
    import numpy as np

    what = "images" if magic == IMAGES_MAGIC else "labels"
    shape, need = _read_header(f, path, magic, dims)
    data = f.read(need + 1)  # bounded by the header: a bomb is cut off after one byte
    if len(data) != need:
        state = "truncated" if len(data) < need else "corrupt (trailing bytes)"
        found = str(len(data)) if len(data) < need else "more"
        raise DatasetError(
            f"{path}: {state} IDX {what} file: header says {'×'.join(map(str, shape))} "
            f"= {need} data bytes, found {found}"
        )
    return np.frombuffer(data, dtype=np.uint8).reshape(shape)


def parse_idx(
    data: bytes, path: Path | str, *, magic: int, dims: tuple[int | None, ...]
) -> np.ndarray:
    """Parse IDX bytes into a uint8 array of shape [N, *dims].

    ``magic`` is the expected magic number; ``dims`` the expected trailing dimensions
    (None: any). The byte length must match the header exactly.
    """
    return _read_stream(io.BytesIO(data), path, magic, dims)


def read_idx(path: Path, *, magic: int, dims: tuple[int | None, ...] = ()) -> np.ndarray:
    """Read and validate one IDX file, gunzipped when it starts with the gzip magic (whatever
    its name); at most the header's promised size is ever inflated (see ``MAX_IDX_BYTES``)."""
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == _GZIP_MAGIC
    except OSError as e:
        raise DatasetError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        with gzip.open(path, "rb") if gz else open(path, "rb") as f:
            return _read_stream(f, path, magic, dims)  # type: ignore[arg-type]
    except (OSError, EOFError, zlib.error) as e:
        if not gz:
            raise DatasetError(
                f"{path}: cannot read ({getattr(e, 'strerror', None) or e})"
            ) from None
        raise DatasetError(
            f"{path}: corrupt gzip file ({e}); delete it and fetch it again"
        ) from None


def idx_count(path: Path, magic: int) -> int:
    """The item count from an IDX header, reading only the first bytes (for ``data list``)."""
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == _GZIP_MAGIC else open
    try:
        with opener(path, "rb") as f:  # type: ignore[operator]
            header = f.read(8)
    except (OSError, EOFError, zlib.error) as e:
        raise DatasetError(f"{path}: corrupt gzip file ({e})") from None
    if len(header) < 8 or int.from_bytes(header[:4], "big") != magic:
        raise DatasetError(f"{path}: not an IDX file with magic number {magic}")
    return int.from_bytes(header[4:8], "big")


def write_idx(path: Path, array: np.ndarray, *, compress: bool | None = None) -> None:
    """Write a uint8 array [N, ...] as an IDX file (gzipped when the name ends in .gz).

    Used by the tests and by ``sample_data`` tooling; the inverse of :func:`read_idx`.
    """
    import numpy as np

    arr = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">BBBB", 0, 0, 0x08, arr.ndim) + struct.pack(
        ">" + "I" * arr.ndim, *arr.shape
    )
    payload = header + arr.tobytes()
    path = Path(path)
    if compress if compress is not None else path.name.endswith(".gz"):
        payload = gzip.compress(payload, mtime=0)
    path.write_bytes(payload)
