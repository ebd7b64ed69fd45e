"""IDX files (MNIST, Fashion-MNIST), gzipped or not, validated against their header."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np

from engine.errors import DatasetError

IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dimensions
LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dimension
_GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: Path) -> bytes:
    """The file's payload, gunzipped when it starts with the gzip magic (whatever its name)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise DatasetError(f"{path}: cannot read ({e.strerror or e})") from None
    if data[:2] != _GZIP_MAGIC:
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as e:
        raise DatasetError(
            f"{path}: corrupt gzip file ({e}); delete it and fetch it again"
        ) from None


def parse_idx(
    data: bytes, path: Path | str, *, magic: int, dims: tuple[int | None, ...]
) -> np.ndarray:
    """Parse IDX bytes into a uint8 array of shape [N, *dims].

    ``magic`` is the expected magic number; ``dims`` the expected trailing dimensions
    (None: any). The byte length must match the header exactly.
    """
    what = "images" if magic == IMAGES_MAGIC else "labels"
    if len(data) < 4:
        raise DatasetError(f"{path}: truncated IDX {what} file ({len(data)} bytes, no header)")
    got = int.from_bytes(data[:4], "big")
    if got != magic:
        raise DatasetError(
            f"{path}: not an IDX {what} file: magic number {got} (0x{got:08x}), "
            f"expected {magic} (0x{magic:08x})"
        )
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DatasetError(f"{path}: truncated IDX {what} file: header needs {header} bytes")
    shape = struct.unpack(">" + "I" * ndim, data[4:header])
    for i, (want, have) in enumerate(zip(dims, shape[1:])):
        if want is not None and want != have:
            exp = "×".join("?" if d is None else str(d) for d in dims)
            raise DatasetError(
                f"{path}: {what} of shape {'×'.join(map(str, shape[1:]))}, expected {exp} "
                f"(dimension {i + 2})"
            )
    need = int(np.prod(shape, dtype=np.int64))
    have_bytes = len(data) - header
    if have_bytes != need:
        state = "truncated" if have_bytes < need else "corrupt (trailing bytes)"
        raise DatasetError(
            f"{path}: {state} IDX {what} file: header says {'×'.join(map(str, shape))} "
            f"= {need} data bytes, found {have_bytes}"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def read_idx(path: Path, *, magic: int, dims: tuple[int | None, ...] = ()) -> np.ndarray:
    """Read and validate one IDX file (see :func:`parse_idx`)."""
    return parse_idx(read_bytes(path), path, magic=magic, dims=dims)


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
    arr = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">BBBB", 0, 0, 0x08, arr.ndim) + struct.pack(
        ">" + "I" * arr.ndim, *arr.shape
    )
    payload = header + arr.tobytes()
    path = Path(path)
    if compress if compress is not None else path.name.endswith(".gz"):
        payload = gzip.compress(payload, mtime=0)
    path.write_bytes(payload)
