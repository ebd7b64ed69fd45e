"""The reproduction's own files: ``reproduce.json`` (the plan, written before the first
part runs and again at the end) and ``summary.json`` (the comparison and checklist),
next to one run directory per part. The CLI and the TUI call these; neither writes the
files itself."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from engine.reproduce.compare import compare
from engine.reproduce.plan import Part
from engine.run.events import to_jsonable
from engine.run.paths import atomic_write
from engine.run.provenance import load_average, source_commit

META = "reproduce.json"
SUMMARY = "summary.json"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def command_line() -> str:
    """The command this process runs, as typed (``malleability reproduce ...``)."""
    import shlex

    args = [Path(sys.argv[0]).name if sys.argv else "malleability", *sys.argv[1:]]
    if args[0] in ("main.py", "__main__.py", "-m", "-c"):
        args[0] = "malleability"
    return shlex.join(args)


def start(
    path: Path,
    parts: list[Part],
    *,
    datasets: list[str],
    tables: list[int],
    quick: bool,
    estimated_seconds: float,
) -> dict[str, Any]:
    """Create ``path`` and write its ``reproduce.json`` (the plan); returns the metadata
    that ``finish`` completes."""
    path.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "datasets": list(datasets),
        "tables": list(tables),
        "quick": quick,
        "protocols": list(dict.fromkeys(p.protocol for p in parts)),
        "parts": [
            {
                "key": p.key,
                "dataset": p.dataset,
                "task": p.task,
                "role": p.role,
                "protocol": p.protocol,
                "spec": p.spec.to_dict(),
            }
            for p in parts
        ],
        "estimated_seconds": estimated_seconds,
        "start_time": _now(),
        "command": command_line(),
        "commit": source_commit(),
        "load_start": load_average(),
    }
    old = _previous(path)
    if old:  # a resumed reproduction keeps the first sitting's record beside this one
        meta["sittings"] = [*old.get("sittings", []), _sitting(old)]
    atomic_write(path / META, json.dumps(meta, indent=2) + "\n")
    return meta


def finish(
    path: Path,
    meta: dict[str, Any],
    runs: dict[str, dict[str, Any]],
    parts: list[Part],
    seconds: float,
) -> dict[str, Any]:
    """Compare the parts' runs with the paper (``compare``), write the end time into
    ``reproduce.json`` and the comparison into ``summary.json``; returns the comparison."""
    comparison = compare(runs, parts)
    meta.update(end_time=_now(), seconds=seconds, load_end=load_average())
    atomic_write(path / META, json.dumps(meta, indent=2) + "\n")
    summary = {
        "status": "finished",
        "experiment": "reproduce",
        "dataset": ",".join(meta["datasets"]),
        "seconds": seconds,
        **comparison,
    }
    atomic_write(path / SUMMARY, json.dumps(to_jsonable(summary), indent=2) + "\n")
    return comparison


def interrupted(path: Path, meta: dict[str, Any], seconds: float) -> None:
    """Record the end of a sitting that stopped early (Ctrl-C, SIGTERM, an error): its end
    time, its wall time so far (parts and any continuation check) and load, so that a
    ``--resume`` counts this sitting's time. ``summary.json`` is left as it was."""
    meta.update(end_time=_now(), seconds=seconds, load_end=load_average(), interrupted=True)
    try:
        atomic_write(path / META, json.dumps(to_jsonable(meta), indent=2) + "\n")
    except OSError:  # never hide the interrupt behind a failed write
        pass


def add_verify(
    path: Path, meta: dict[str, Any], comparison: dict[str, Any], check: dict[str, Any]
) -> None:
    """Record the continuation check (``engine.reproduce.verify``): ``verify`` in
    ``reproduce.json`` (with the sitting's end time and load, now after the check), the
    checklist items' ``verify`` in ``summary.json``."""
    meta["verify"] = check
    # the sitting ends after the check: its end time and load (``seconds`` stays the parts')
    meta.update(end_time=_now(), load_end=load_average())
    atomic_write(path / META, json.dumps(to_jsonable(meta), indent=2) + "\n")
    summary = json.loads((path / SUMMARY).read_text())
    summary["checklist"] = comparison["checklist"]
    atomic_write(path / SUMMARY, json.dumps(to_jsonable(summary), indent=2) + "\n")


def _previous(path: Path) -> dict[str, Any] | None:
    """The ``reproduce.json`` a resumed reproduction already has (None: a new one)."""
    try:
        old = json.loads((path / META).read_text())
    except (OSError, ValueError):
        return None
    return old if isinstance(old, dict) else None


def _sitting(meta: dict[str, Any]) -> dict[str, Any]:
    """What one earlier sitting of a reproduction recorded: its command, commit, times and load."""
    keys = (
        "command",
        "commit",
        "start_time",
        "end_time",
        "seconds",
        "load_start",
        "load_end",
        "interrupted",
    )
    return {k: meta.get(k) for k in keys}
