"""Output path checks, made before any work: a clear one-line error instead of an OSError later.

Folders asked for (a run directory, an export or figures folder) are created with their
parents; a file asked for (a report, a saved config) must go into an existing folder.
Every check raises ``ConfigError(option, path, what is allowed)``.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.errors import ConfigError


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


def _exists(p: Path) -> bool:
    try:
        os.stat(p)
    except (OSError, ValueError):  # missing, a name too long, below a file, a NUL byte
        return False
    return True


def _existing_ancestor(path: Path) -> Path:
    p = path.absolute()
    while not _exists(p) and p != p.parent:
        p = p.parent
    return p


def _check_names(path: Path, option: str) -> None:
    anc = _existing_ancestor(path)
    limit = _name_max(anc if anc.is_dir() else anc.parent)
    for part in path.parts:
        if len(os.fsencode(part)) > limit:
            raise ConfigError(
                option,
                str(path),
                f"a path whose names have at most {limit} bytes ({part[:20]}… has {len(os.fsencode(part))})",
            )
    if not _exists(path) and not anc.is_dir():
        raise ConfigError(option, str(path), f"a path below a folder ({anc} is a file)")


RUN_MARKERS = ("spec.toml", "env.json", "events.jsonl")
"""Files only a run directory has: any one makes a folder a run (a damaged one when
others are missing), so a run that lost its spec.toml is listed as damaged, not hidden."""

WRITER_MARKERS = ("events.jsonl", "reproduce.json")
"""What marks a folder as written by a run (or a reproduce run) and by nothing else; a
run's ``.lock`` (``engine.run.lock``) marks one too. Not spec.toml or env.json alone: an
export holds copies of those, and exporting over an export (``--force``) is allowed."""


def run_dir_around(path: str | Path) -> Path | None:
    """The run (or reproduce) directory that ``path`` is, or lies in; None when none."""
    try:
        p = Path(path).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        p = Path(os.path.abspath(path))
    from engine.run.lock import LOCK_NAME, recorded_owner

    for d in (p, *p.parents):
        if any(_exists(d / m) for m in WRITER_MARKERS):
            return d
        if _exists(d / LOCK_NAME) and recorded_owner(d) is not None:
            return d
    return None


def check_outside_runs(path: str | Path, option: str, *, own: str | Path | None = None) -> None:
    """Refuse a write into a run directory: only the run's own writer writes there.

    ``own`` is the command's own output in the run it reads (``<run>/report.md``,
    ``<run>/figures``): that path, and what lies below it, is allowed.
    """
    run = run_dir_around(path)
    if run is None:
        return
    if own is not None:
        mine = Path(own).resolve()
        p = Path(path).resolve()
        if p == mine or mine in p.parents:
            return
    raise ConfigError(
        option,
        str(path),
        f"a path outside the run directory {run} (only the run itself writes there)",
    )


def check_folder_target(
    path: str | Path, option: str, *, run_writer: bool = False, own: str | Path | None = None
) -> Path:
    """``path`` is, or can be created as, a writable folder; outside any run directory
    unless the caller is the run's writer (``run_writer``) or it is the command's ``own``."""
    p = Path(path)
    _check_names(p, option)
    if not run_writer:
        check_outside_runs(p, option, own=own)
    if p.exists() and not p.is_dir():
        raise ConfigError(option, str(p), "a folder (this is a file)")
    anc = _existing_ancestor(p)
    if not os.access(anc, os.W_OK | os.X_OK):
        raise ConfigError(option, str(p), f"a folder you can write ({anc} is not writable)")
    return p


def check_file_target(path: str | Path, option: str, *, own: str | Path | None = None) -> Path:
    """``path`` can be written as a file: not a folder, in an existing writable folder, not
    into a run directory (but for the command's ``own`` output there)."""
    p = Path(path)
    _check_names(p, option)
    check_outside_runs(p, option, own=own)
    if p.is_dir():
        raise ConfigError(option, str(p), "a file name (this is a folder)")
    if p.exists() and not p.is_file():
        raise ConfigError(option, str(p), "a regular file (this is a device or pipe)")
    parent = p.absolute().parent
    if not parent.is_dir():
        raise ConfigError(option, str(p), f"a file in an existing folder ({parent} does not exist)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(
            option, str(p), f"a file in a folder you can write ({parent} is not writable)"
        )
    return p


def make_folder(path: str | Path, option: str) -> Path:
    """``check_folder_target`` then create it (and its parents)."""
    p = check_folder_target(path, option)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(option, str(p), f"a folder that can be created ({e.strerror})") from None
    return p


def claim_run_dir(path: str | Path, *, resume: bool) -> Path:
    """Create (or, with ``resume``, check) a run directory; ``mkdir`` is the atomic claim.

    A new run needs a new or empty folder; ``resume`` needs the run's spec.toml there.
    The exclusive writer lock (``runlock``) is taken right after by the store.
    """
    p = check_folder_target(os.path.normpath(path), "out", run_writer=True)  # no stray a/../
    root = runs_root()
    if _exists(root) and _exists(p) and os.path.samefile(root, p):
        raise ConfigError(
            "out", str(path), f"a folder for this run, not the runs root {root} itself"
        )
    if resume:
        if not (p / "spec.toml").is_file():
            raise ConfigError(
                "out",
                str(p),
                "a run directory to resume (it has spec.toml); start a new run without --resume",
            )
        return p
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.mkdir()
    except FileExistsError:
        pass  # an existing (empty) folder is fine: the store checks it once it holds the lock
    except OSError as e:
        raise ConfigError("out", str(p), f"a folder that can be created ({e.strerror})") from None
    return p


def display_name(name: str) -> str:
    """A file name as text every writer can encode: bytes that are not UTF-8 (Python keeps
    them as lone surrogates) are spelled ``\\xff``, so a run folder named in another
    encoding still gets a report, figure titles and a JSON export."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file in the same folder and a rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:  # a full disk, a file-size limit: name the file, leave no temp file
        tmp.unlink(missing_ok=True)
        if e.filename is not None:
            raise
        raise OSError(e.errno, e.strerror, str(path)) from None
    os.replace(tmp, path)


RUNS_ENV = "MALLEABILITY_RUNS"


DEFAULT_RUNS = "runs"


def runs_root(root: str | Path | None = None) -> Path:
    """The runs folder: ``root`` when given, else ``$MALLEABILITY_RUNS``, else ``./runs``."""
    return Path(root or os.environ.get(RUNS_ENV) or DEFAULT_RUNS)
