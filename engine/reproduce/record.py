"""The reproduction's own files: ``reproduce.json`` (the plan, written before the first
part runs and again at the end) and ``summary.json`` (the comparison and checklist),
next to one run directory per part. The CLI and the TUI call these; neither writes the
files itself."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from engine.reproduce.compare import compare
from engine.reproduce.plan import Part
from engine.run.events import to_jsonable
from engine.run.paths import atomic_write

META = "reproduce.json"
SUMMARY = "summary.json"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


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
    }
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
    meta.update(end_time=_now(), seconds=seconds)
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
