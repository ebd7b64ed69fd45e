"""Readers that validate a run directory: each damaged file is one line "damaged run: FILE: what".

A run directory may be damaged by a full disk, a hand edit or a copy cut short. Every
reader (``read_run``, ``runs list``, report, figures, export, the TUI) goes through these
checks, so a damaged file is named instead of surfacing as a JSONDecodeError, a
UnicodeDecodeError or a ``'list' object has no attribute 'get'`` deep in a front end.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from engine.errors import ConfigError, EngineError
from engine.results.tables import ADDED_LATER, KIND_TEXT, Row, parse_cell

MAX_RUN_FILE = 1 << 30  # 1 GiB: a larger "result" file is damage, not data


class DamagedRun(EngineError):
    """A run directory file that cannot be read as what it should be."""

    def __init__(self, file: str | Path, what: str) -> None:
        self.file = str(file)
        self.what = what
        super().__init__(f"damaged run: {file}: {what}")


def _read_text(path: Path) -> str:
    try:
        if not path.is_file():
            raise DamagedRun(path, "not a regular file" if path.exists() else "missing")
        if path.stat().st_size > MAX_RUN_FILE:
            raise DamagedRun(path, f"larger than {MAX_RUN_FILE >> 20} MiB")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DamagedRun(path, "not UTF-8 text (binary data)") from None
    except OSError as e:
        raise DamagedRun(path, f"cannot be read ({e.strerror})") from None


MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a run file may hold (ours nest ≤ 6 deep)."""


def parse_json(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` for untrusted run files: ValueError (never RecursionError) for text
    that is not JSON or nests deeper than ``max_depth``, so a hostile file is damage, not
    a crash of the reader (or of every later walk over its value)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {max_depth} levels") from None
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > max_depth:
                raise ValueError(f"nested deeper than {max_depth} levels")
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return value


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file that must hold one object."""
    text = _read_text(path)
    try:
        d = parse_json(text)
    except ValueError as e:
        raise DamagedRun(path, f"not valid JSON ({e.args[0].split(':')[0]})") from None
    if not isinstance(d, dict):
        raise DamagedRun(path, f"a JSON object expected, found {type(d).__name__}")
    return d


RUN_STATUSES = ("running", "finished", "partial", "failed", "cancelled", "interrupted")
"""The statuses the run store writes to env.json; any other word is damage."""


def check_env(d: dict[str, Any], path: Path) -> dict[str, Any]:
    """env.json: string-valued status (one the store writes) and times when present."""
    for k in ("status", "start_time", "end_time", "host", "device"):
        if k in d and not isinstance(d[k], str):
            raise DamagedRun(path, f"{k} must be a string, found {type(d[k]).__name__}")
    if "status" in d and d["status"] not in RUN_STATUSES:
        from engine.errors import shown

        raise DamagedRun(
            path, f"status must be one of {', '.join(RUN_STATUSES)}, found {shown(d['status'])}"
        )
    return d


def check_summary(d: dict[str, Any], path: Path) -> dict[str, Any]:
    """summary.json: status/experiment/dataset strings; each section an object whose headline is text."""
    for k in ("status", "experiment", "dataset"):
        if k in d and not isinstance(d[k], str):
            raise DamagedRun(path, f"{k} must be a string, found {type(d[k]).__name__}")
    for k, v in d.items():
        if k in ("status", "experiment", "dataset"):
            continue
        if not isinstance(v, dict):
            raise DamagedRun(path, f"section {k!r} must be an object, found {type(v).__name__}")
        h = v.get("headline")
        if h is not None and not (
            isinstance(h, str) or isinstance(h, list) and all(isinstance(x, str) for x in h)
        ):
            raise DamagedRun(path, f"{k}.headline must be text or a list of lines")
    return d


def read_csv_table(path: Path, row_type: type[Row] | None) -> list[dict[str, str]]:
    """A result CSV: UTF-8, a header holding ``row_type``'s columns, each cell of its
    column's kind (``engine.results.tables``: text, number, integer, True/False). Guard
    (bool) columns may be absent: runs written before they existed have none. Integer
    cells may not be empty (readers index and group by them)."""
    text = _read_text(path)
    if "\x00" in text:
        raise DamagedRun(path, "binary data in a CSV")
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise DamagedRun(path, f"not a valid CSV ({e})") from None
    if not text.strip():
        return []
    header = next(csv.reader(io.StringIO(text)))
    kinds = row_type.kinds() if row_type is not None else {}
    missing = [
        c for c, k in kinds.items() if c not in header and k is not bool and c not in ADDED_LATER
    ]
    if missing:
        raise DamagedRun(path, f"missing column(s) {', '.join(missing)}")
    for i, r in enumerate(rows, start=2):
        if None in r:
            raise DamagedRun(path, f"line {i}: more fields than columns")
        for c, v in r.items():
            kind = kinds.get(c, str)
            if kind is str:
                continue
            if v is None:
                raise DamagedRun(path, f"line {i}: missing {c}")
            try:
                if parse_cell(kind, v) is None and kind is int:
                    raise ValueError
            except ValueError:
                raise DamagedRun(
                    path, f"line {i}: {c}={v[:30]!r} is not {KIND_TEXT[kind]}"
                ) from None
    return rows


def read_spec(path: Path) -> Any:
    """spec.toml as a RunSpec (strictly typed, see engine.run.spec.codec)."""
    from engine.run.spec import RunSpec

    if not path.is_file():
        raise DamagedRun(path, "missing" if not path.exists() else "not a regular file")
    try:
        return RunSpec.load(path)
    except ConfigError as e:
        what = f"invalid {e.field}={e.value!r}: {e.allowed}"
        raise DamagedRun(path, what) from None
