"""Reading small files a user names (a spec, a dataset's JSON metadata) without trusting
what the path is: a FIFO, a terminal or ``/dev/zero`` given as ``--config`` would block
or be read forever, and a multi-gigabyte file would fill memory. ``read_small_text``
refuses anything but a regular file of a bounded size, before reading it
(docs/reliability.md#guarantees).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class FileRefused(ValueError):
    """A path that is not a regular file of the allowed size: ``str`` says what it is."""


def kind_of(path: Path) -> str:
    """What ``path`` is, for an error line: "a regular file", "a folder", "a dangling
    symlink", "a symlink loop", "a FIFO", "a socket", "a character device", "a block
    device" or "missing" (never raises; nothing is opened)."""
    try:
        st = path.stat()
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "a symlink loop"
        return "a dangling symlink" if path.is_symlink() else "missing"
    except ValueError:  # a NUL in the name
        return "missing"
    return _kind(st.st_mode)


def _kind(mode: int) -> str:
    for test, text in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return text
    return "a special file"


def read_small_text(path: Path, max_bytes: int) -> str:
    """The UTF-8 text of regular file ``path`` (at most ``max_bytes`` bytes).

    Raises FileRefused (what the path is, or its size against the ceiling) for anything
    else, checked before a byte is read: the file is opened non-blocking (a FIFO without
    a writer cannot hang it) and checked again once open (a swap in between is seen).
    OSError (permissions) and UnicodeDecodeError reach the caller as they are.
    """
    kind = kind_of(path)
    if kind not in ("a regular file", "missing"):  # missing: open's own FileNotFoundError
        raise FileRefused(f"{kind}, not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{_kind(st.st_mode)}, not a regular file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileRefused(f"larger than {_size(max_bytes)}")
    return data.decode("utf-8")


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"
