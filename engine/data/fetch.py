"""Download a data set's original files from its public mirrors, verified and safely unpacked.

Each file is streamed to a temporary file next to its destination, checked against the
published MD5 / SHA-256, and only then renamed into place (atomic on one file system), so
an interrupted or corrupt download never leaves a file the loaders would trust. Mirrors are
tried in order. Archives are unpacked by :func:`safe_extract`, which accepts only regular
files and folders inside the destination.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from engine.data.registry import RemoteFile, default_data_home, get_info, locate
from engine.errors import DatasetError

ProgressFn = Callable[[int, "int | None", str], None]
"""progress(done_bytes, total_bytes or None when unknown, filename)."""

_CHUNK = 1 << 16
_USER_AGENT = "malleability-data-fetch/0.1 (+https://arxiv.org/abs/2603.13085)"


@dataclass(frozen=True)
class FetchResult:
    """What ``fetch`` did: ``path`` is the folder the loaders will read (usable as --data-dir)."""

    name: str
    path: Path | None
    downloaded: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    """Files already present with a matching checksum."""
    note: str = ""


class _ChecksumMismatch(Exception):
    pass


def file_digests(path: Path) -> tuple[str, str]:
    """(md5, sha256) hex digests of a file."""
    md5, sha = hashlib.md5(usedforsecurity=False), hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            md5.update(chunk)
            sha.update(chunk)
    return md5.hexdigest(), sha.hexdigest()


def _mismatch(rf: RemoteFile, md5: str, sha: str) -> str | None:
    if rf.md5 and md5 != rf.md5.lower():
        return f"checksum mismatch: md5 {md5}, expected {rf.md5}"
    if rf.sha256 and sha != rf.sha256.lower():
        return f"checksum mismatch: sha256 {sha}, expected {rf.sha256}"
    return None


def _url(base: str, filename: str) -> str:
    return base + filename if base.endswith("/") else f"{base}/{filename}"


def _download_one(
    url: str, dest: Path, rf: RemoteFile, progress: ProgressFn | None, timeout: float
) -> None:
    req = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        length = resp.headers.get("Content-Length")
        total = int(length) if length and length.isdigit() else None
        fd, tmp_name = tempfile.mkstemp(
            dir=dest.parent, prefix=_part_prefix(dest.name), suffix=".part"
        )
        tmp = Path(tmp_name)
        try:
            md5, sha = hashlib.md5(usedforsecurity=False), hashlib.sha256()
            done = 0
            with os.fdopen(fd, "wb") as out:
                if progress:
                    progress(0, total, rf.filename)
                while chunk := resp.read(_CHUNK):
                    out.write(chunk)
                    md5.update(chunk)
                    sha.update(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total, rf.filename)
            if total is not None and done != total:
                raise OSError(f"connection closed after {done} of {total} bytes")
            bad = _mismatch(rf, md5.hexdigest(), sha.hexdigest())
            if bad:
                raise _ChecksumMismatch(bad)
            os.replace(tmp, dest)
        except BaseException:
            tmp.unlink(missing_ok=True)  # never leave a partial file behind
            raise


def download_file(
    rf: RemoteFile,
    folder: Path,
    mirrors: Sequence[str],
    *,
    progress: ProgressFn | None = None,
    timeout: float = 60.0,
) -> Path:
    """Download ``rf`` into ``folder`` from the first mirror that serves it with the right checksum."""
    dest = folder / rf.filename
    failures = []
    for base in mirrors:
        url = _url(base, rf.filename)
        try:
            _download_one(url, dest, rf, progress, timeout)
            return dest
        except _ChecksumMismatch as e:
            failures.append(f"{url}: {e}")
        except urllib.error.HTTPError as e:
            failures.append(f"{url}: HTTP {e.code} {e.reason}")
        except urllib.error.URLError as e:
            failures.append(f"{url}: {e.reason}")
        except (OSError, ValueError) as e:  # timeouts, resets, bad URLs
            failures.append(f"{url}: {e}")
    if not failures:
        raise DatasetError(f"{rf.filename}: no mirror to download it from")
    raise DatasetError(
        f"could not download {rf.filename} (partial file removed): " + "; ".join(failures)
    )


def _part_prefix(name: str) -> str:
    """Temp files are ``.<name>.<pid>.<random>.part``: the pid says whether the writer lives."""
    return f".{name}.{os.getpid()}."


def clean_stale_parts(folder: Path) -> list[Path]:
    """Remove ``.part`` files whose writer is gone (a fetch killed by SIGKILL); returns them.

    A part file of a live process (another fetch running now) is left alone.
    """
    from engine.procs import pid_alive

    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for f in folder.rglob(".*.part"):
        parts = f.name.split(".")  # "", name…, pid, random, "part"
        pid = int(parts[-3]) if len(parts) >= 5 and parts[-3].isdigit() else None
        if pid is not None and pid_alive(pid):  # a fetch running now (this process included)
            continue
        try:
            f.unlink()
            removed.append(f)
        except OSError:
            pass
    return removed


def _norm_member(name: str) -> str:
    n = str(PurePosixPath(name.replace("\\", "/")))  # "./a/b/" → "a/b"
    return "" if n == "." else n


def _collision(members: list[tarfile.TarInfo], dest: Path) -> str | None:
    """Why the members would collide with each other or with what ``dest`` holds, or None.

    Refused: a file and a folder of the same name, a file twice, a file used as a folder
    (``x`` then ``x/y``), and a member whose kind differs from what already exists there.
    """
    files: set[str] = set()
    dirs: set[str] = set()
    for m in members:
        n = _norm_member(m.name)
        if not n:
            continue
        anc = [str(a) for a in PurePosixPath(n).parents if str(a) != "."]
        for a in anc:
            if a in files:
                return f"{m.name!r} lies below the file member {a!r}"
            if (dest / a).exists() and not (dest / a).is_dir():
                return f"{m.name!r} needs the folder {dest / a}, which is a file"
        dirs.update(anc)
        if m.isdir():
            if n in files:
                return f"folder member {m.name!r} has the name of a file member"
            if (dest / n).exists() and not (dest / n).is_dir():
                return f"folder member {m.name!r} would replace the file {dest / n}"
            dirs.add(n)
        else:
            if n in dirs:
                return f"file member {m.name!r} has the name of a folder member"
            if n in files:
                return f"file member {m.name!r} appears twice"
            if (dest / n).is_dir():
                return f"file member {m.name!r} would replace the folder {dest / n}"
            files.add(n)
    return None


def _unsafe_reason(m: tarfile.TarInfo) -> str | None:
    name = m.name
    if name.startswith(("/", "\\")) or PureWindowsPath(name).drive or os.path.isabs(name):
        return "absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "'..' path component"
    if m.issym() or m.islnk():
        return f"link to {m.linkname!r}"
    if m.ischr() or m.isblk() or m.isfifo():
        return "device or FIFO"
    if not (m.isreg() or m.isdir()):
        return "not a regular file or folder"
    return None


def safe_extract(archive: Path, dest: Path) -> list[str]:
    """Unpack a tar archive (any compression) into ``dest``; returns the member names.

    Every member is checked before anything is written: absolute paths, ``..`` components,
    symbolic and hard links, devices and FIFOs, and members that collide (see
    :func:`_collision`) raise DatasetError naming the member.
    """
    try:
        tf = tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        raise DatasetError(f"{archive}: not a readable tar archive ({e})") from None
    dest_real = dest.resolve()
    with tf:
        try:
            members = tf.getmembers()
        except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
            raise DatasetError(f"{archive}: corrupt tar archive ({e})") from None
        for m in members:
            why = _unsafe_reason(m)
            if why:
                raise DatasetError(
                    f"{archive}: unsafe tar member {m.name!r} ({why}); nothing was extracted"
                )
        clash = _collision(members, dest)
        if clash:
            raise DatasetError(f"{archive}: colliding tar members: {clash}; nothing was extracted")
        for m in members:
            target = dest / m.name
            # a folder already in dest could be a symlink pointing elsewhere: check the real path
            parent = target if m.isdir() else target.parent
            parent.mkdir(parents=True, exist_ok=True)
            if not parent.resolve().is_relative_to(dest_real):
                raise DatasetError(f"{archive}: tar member {m.name!r} would land outside {dest}")
            if m.isdir():
                continue
            src = tf.extractfile(m)
            if src is None:  # pragma: no cover - isreg() members always have data
                continue
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=_part_prefix(target.name), suffix=".part")
            try:
                with os.fdopen(fd, "wb") as out, src:
                    shutil.copyfileobj(src, out, _CHUNK)
                os.replace(tmp, target)
            except (tarfile.TarError, EOFError, zlib.error) as e:
                Path(tmp).unlink(missing_ok=True)
                raise DatasetError(f"{archive}: corrupt tar member {m.name!r} ({e})") from None
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
    return [m.name for m in members]


def _complete(name: str, folder: Path) -> bool:
    info = get_info(name)
    hit = locate(name, folder)
    return hit is not None and all((hit / f).is_file() for f in info.files)


def fetch(
    name: str,
    root: str | os.PathLike | None = None,
    *,
    mirrors: Sequence[str] | None = None,
    files: Sequence[RemoteFile] | None = None,
    progress: ProgressFn | None = None,
    timeout: float = 60.0,
) -> FetchResult:
    """Download data set ``name`` into ``root/<name>`` (default root: ``default_data_home()``).

    ``mirrors`` (base URLs) and ``files`` (names + checksums) replace the registry's, e.g.
    for an internal mirror. Files already present with the right checksum are skipped; an
    archive is unpacked with :func:`safe_extract` and then removed. Raises DatasetError when
    every mirror fails for a file (each failure listed) or an archive is unsafe or corrupt.
    """
    info = get_info(name)
    if info.builtin:
        return FetchResult(info.name, None, note=f"{info.name} is built in: nothing to download")
    folder = Path(root).expanduser() if root is not None else default_data_home()
    folder = folder / info.aliases[0]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DatasetError(f"cannot create {folder}: {e.strerror or e}") from None
    clean_stale_parts(folder)  # left by a fetch that was killed (SIGKILL cannot clean up)
    mirrors = tuple(mirrors) if mirrors is not None else info.mirrors
    downloaded, skipped = [], []
    for rf in tuple(files) if files is not None else info.remote:
        dest = folder / rf.filename
        if rf.extract and _complete(info.name, folder):
            skipped.append(rf.filename)
            continue
        if not rf.extract and dest.is_file() and _mismatch(rf, *file_digests(dest)) is None:
            skipped.append(rf.filename)
            continue
        download_file(rf, folder, mirrors, progress=progress, timeout=timeout)
        downloaded.append(rf.filename)
        if rf.extract:
            try:
                safe_extract(dest, folder)
            finally:
                dest.unlink(missing_ok=True)  # unpacked, or unsafe: either way not kept
    return FetchResult(
        info.name, locate(info.name, folder) or folder, tuple(downloaded), tuple(skipped)
    )
