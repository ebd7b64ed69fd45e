"""Shipped results (docs/results/index.md): a finished reproduction imported into
``docs/results/<dataset>/<protocol>/`` and the page generated from those files alone.

Layout of one (data set, protocol) folder:

* ``checklist.json``: ``{"dataset", "protocol", "checklist": [...]}``, the reproduction's
  ``summary.json`` items of that data set and protocol (each naming both), each with
  ``cells``: the trained cells its verdict rests on (``total``, ``passing``: converged
  and above chance, ``table``: the CSV below) and, after ``reproduce --verify``, ``verify``.
* ``<part>-<table>.csv``: the rows behind the verdicts (``TABLES``), ``part`` being
  ``multiclass``, ``binary`` or ``binary-gd``, copied from the part's run directory.
* ``figures/*.png``: drawn by the front end (``malleability results add``).
* ``run.json``: the command, commit, wall time (``seconds``: the last sitting's;
  ``wall_seconds``: all sittings and the continuation check), estimate, load, times and
  earlier sittings of the reproduction, and its continuation check (``verify``).

``page(root)`` renders ``index.md`` from these files only: a test regenerates it and
finds the committed page unchanged, so no number on it is typed by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.reproduce.claims import _cell, _passes
from engine.run.paths import atomic_write

TABLES = ("ntk_distance", "flip_rates", "sharpness", "spectrum", "alignment")
"""The tables whose rows the checklist's verdicts are decided on."""

CLAIM_TABLE = {
    1: "ntk_distance",
    3: "flip_rates",
    4: "flip_rates",
    6: "sharpness",
    7: "ntk_distance",
}
"""The claims decided on trained cells and the table holding those cells (2 and 5 are
kernel computations on the data: no trained cell)."""

RUN_KEYS = (
    "command",
    "commit",
    "seconds",
    "estimated_seconds",
    "start_time",
    "end_time",
    "load_start",
    "load_end",
    "quick",
    "sittings",
    "verify",
)


def part_name(part: dict[str, Any]) -> str:
    """``multiclass``, ``binary`` or ``binary-gd``: a part's name within its folder."""
    return str(part["task"]) + ("-gd" if part.get("role") == "gd" else "")


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        what = f"a finished reproduction ({path.name}: {e})"
        raise ConfigError("run", str(path.parent), what) from None
    if not isinstance(data, dict):
        raise ConfigError("run", str(path.parent), f"a finished reproduction ({path.name})")
    return data


def _rows(csv: Path) -> list[dict[str, str]]:
    import csv as csvlib

    if not csv.is_file():
        return []
    with csv.open(newline="") as f:
        return list(csvlib.DictReader(f))


def _item_cells(item: dict[str, Any], folder: Path) -> dict[str, Any] | None:
    """The trained cells behind ``item``: how many, how many pass both guards, which CSV."""
    table = CLAIM_TABLE.get(int(item["claim"]))
    if table is None:
        return None
    part = "binary-gd" if str(item.get("sweep", "")).startswith("full-batch GD") else "multiclass"
    if item["claim"] == 3 and not (folder / f"multiclass-{table}.csv").is_file():
        part = "binary"
    if not (folder / f"{part}-{table}.csv").is_file():
        return {"table": None, "total": 0, "passing": 0}
    rows = _rows(folder / f"{part}-{table}.csv")
    if item["claim"] == 3:
        rows = [r for r in rows if r.get("training") == "standard"]
    if item["claim"] == 4:
        rows = [r for r in rows if r.get("model") == "2L-ReLU" and r.get("attack") == "pgd"]
    models = {1: ("2L-ReLU", "MLP-Attn"), 7: ("2L-ReLU", "QKV-Attn")}.get(
        int(item["claim"]), ("2L-ReLU", "MLP-Attn")
    )
    rows = [r for r in rows if r.get("model") in models]
    cells: dict[str, bool] = {}
    for r in rows:  # flip rows repeat a cell per ε, ridge and ranking: one verdict a cell
        c = _cell(r)
        cells[c] = cells.get(c, True) and _passes(r)
    return {
        "table": f"{part}-{table}.csv",
        "total": len(cells),
        "passing": sum(cells.values()),
    }


def import_run(run: Path, into: Path) -> list[Path]:
    """Copy a finished reproduction ``run`` into ``into/<dataset>/<protocol>/`` (the module
    docstring's layout, figures aside); returns the folders written. A folder of the same
    data set and protocol is replaced whole, so a re-import leaves nothing stale."""
    meta, summary = _read(run / "reproduce.json"), _read(run / "summary.json")
    if "end_time" not in meta or "checklist" not in summary:
        raise ConfigError("run", str(run), "a finished reproduction (reproduce.json has no end)")
    parts = meta.get("parts", [])
    protocols = meta.get("protocols") or ["paper"]
    written = []
    for ds in meta.get("datasets", []):
        for proto in protocols:
            mine = [p for p in parts if p["dataset"] == ds and p.get("protocol", "paper") == proto]
            if not mine:
                continue
            folder = into / ds / proto
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            for p in mine:
                for t in TABLES:
                    src = run / p["key"] / f"{t}.csv"
                    if src.is_file():
                        shutil.copyfile(src, folder / f"{part_name(p)}-{t}.csv")
            items = [
                dict(c, protocol=c.get("protocol", proto))
                for c in summary["checklist"]
                if c.get("dataset") == ds and c.get("protocol", proto) == proto
            ]
            for item in items:
                if cells := _item_cells(item, folder):
                    item["cells"] = cells
            check = {"dataset": ds, "protocol": proto, "checklist": items}
            atomic_write(folder / "checklist.json", json.dumps(check, indent=2) + "\n")
            info = {k: meta.get(k) for k in RUN_KEYS}
            info["command"] = portable_command(info.get("command"), run)
            info["sittings"] = [
                dict(st, command=portable_command(st.get("command"), run))
                for st in info.get("sittings") or []
            ]
            info["wall_seconds"] = wall_seconds(meta)
            info.update(dataset=ds, protocol=proto, parts=[p["key"] for p in mine])
            atomic_write(folder / "run.json", json.dumps(info, indent=2) + "\n")
            written.append(folder)
    return written


def portable_command(command: Any, run: Path, base: Path | None = None) -> Any:
    """``command`` as a reader can type it in the repository: the reproduction's own
    folder (``--out``) written ``RUN``, any other absolute path relative to ``base`` (the
    working directory: the repository's root, where ``results add`` runs), so shipped
    files name no folder of the machine that ran them. Not a string: returned as is."""
    import os
    import shlex

    if not isinstance(command, str):
        return command
    here = str((base or Path.cwd()).resolve())
    own = str(run.resolve())

    def one(tok: str) -> str:
        flag, eq, val = tok.partition("=") if tok.startswith("--") else ("", "", tok)
        if not val.startswith("/"):
            return tok
        p = str(Path(val).resolve())
        new = "RUN" if p == own else os.path.relpath(p, here)
        return f"{flag}{eq}{new}"

    return shlex.join(one(t) for t in shlex.split(command))


def wall_seconds(meta: dict[str, Any]) -> float:
    """The reproduction's wall time over all its sittings (``--resume``), the continuation
    check's included."""
    sittings = [*meta.get("sittings", []), meta]
    total = sum(float(s.get("seconds") or 0.0) for s in sittings)
    return total + float((meta.get("verify") or {}).get("seconds") or 0.0)


def folders(root: Path) -> list[Path]:
    """The committed (data set, protocol) folders under ``root``, sorted."""
    return sorted(p.parent for p in root.glob("*/*/checklist.json"))
