"""The run store: writes a run directory (docs/architecture.md#run-directory) from the event stream.

Everything is written as events arrive, atomically (temp file + rename for the
CSVs, spec, env and summary; events.jsonl is append-only and flushed per line),
so an interrupted run keeps every finished cell and ``--resume`` can skip them.
"""

from __future__ import annotations

import csv
import io
import json
import platform
import socket
import sys
import time
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.results.tables import TABLES
from engine.run.events import (
    CellFailed,
    CellFinished,
    Event,
    Failed,
    Finished,
    Summary,
    TableRow,
    to_jsonable,
)
from engine.run.lock import LOCK_NAME, RunLock
from engine.run.paths import atomic_write, claim_run_dir
from engine.run.provenance import load_average, source_commit
from engine.run.spec import RunSpec

# Column names are part of the public interface (docs/architecture.md#run-directory):
# the fields of each table's row type, in order (engine.results.tables).
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {name: t.columns() for name, t in TABLES.items()}


def _cell(v: Any) -> Any:
    v = to_jsonable(v)
    return "" if v is None else v


def env_info(spec: RunSpec) -> dict[str, Any]:
    """Versions, device and host of this run."""
    import numpy
    import torch

    import engine
    from engine.device import resolve_device

    try:
        device = str(resolve_device(spec.device))
    except ConfigError:
        device = spec.device
    info: dict[str, Any] = {
        "malleability": engine.__version__,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "device": device,
        "cuda": torch.version.cuda,
        "threads": torch.get_num_threads(),
        "seeds": list(spec.seeds),
    }
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


class RunStore:
    """Consumes events and keeps ``path`` a complete, readable run directory."""

    def __init__(self, path: str | Path, spec: RunSpec, *, resume: bool = False) -> None:
        self.path = Path(path)
        self.spec = spec
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.summary: dict[str, Any] = {}
        self.done_cells: set[str] = set()
        self.previous_artifacts: dict[str, list[Any]] = {}
        """Resume: artifact name → the data of the finished cells' artifacts (read back)."""
        self.failed_cells: dict[str, str] = {}
        self.status = "running"
        self._dirty: set[str] = set()
        self._pending: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self.path = claim_run_dir(self.path, resume=resume)  # normalised: no stray a/../
        self._lock = RunLock(self.path).acquire()  # one writer: a second one is refused here
        self.notes: list[str] = [self._lock.note] if self._lock.note else []
        try:
            if resume and (self.path / "events.jsonl").exists():
                self._load_previous()
            elif resume and any(p.name != LOCK_NAME for p in self.path.iterdir()):
                raise ConfigError(
                    "out",
                    str(self.path),
                    "a run directory with its events.jsonl to resume (this folder has none, so "
                    "nothing it holds can be continued): use a new --out",
                )
            elif any(p.name != LOCK_NAME for p in self.path.iterdir()):
                raise ConfigError(
                    "out", str(self.path), "a new or empty folder (or pass --resume to continue it)"
                )
            atomic_write(self.path / "spec.toml", spec.to_toml())
            self.env = env_info(spec)
            self.env.update(
                start_time=_iso(),
                status="running",
                commit=source_commit(),
                load_start=load_average(),
            )
            if resume:
                self.env["resumed"] = True
            self._write_env()
            self._events = open(self.path / "events.jsonl", "a", encoding="utf-8")
            self._flush_tables(all_tables=True)
        except BaseException:
            self._lock.release()
            raise

    # -- resume ------------------------------------------------------------------

    def _load_previous(self) -> None:
        """Keep the events of finished cells; drop partial ones (they are re-run)."""
        from engine.run.validate import parse_json

        raw = (self.path / "events.jsonl").read_bytes().splitlines()
        events = []
        for b in raw:
            try:
                e = parse_json(b.decode("utf-8"))
            except ValueError:  # a line cut by the interruption, or damaged: its cell re-runs
                continue
            if isinstance(e, dict) and isinstance(e.get("kind"), str):
                events.append(e)
        self._check_same_spec(events)
        self.done_cells = {e["cell"] for e in events if e.get("kind") == "CellFinished"}
        kept = []
        for e in events:
            cell = e.get("cell")
            if cell is not None and (
                cell == "" and e["kind"] == "TableRow" or cell and cell not in self.done_cells
            ):
                continue
            if e["kind"] in ("Finished", "Failed", "Summary"):
                continue
            kept.append(e)
            if e["kind"] == "TableRow":
                self.tables.setdefault(e["table"], []).append(e["row"])
            elif e["kind"] == "Artifact" and cell:
                self.previous_artifacts.setdefault(e["name"], []).append(e.get("data"))
        atomic_write(self.path / "events.jsonl", "".join(json.dumps(e) + "\n" for e in kept))

    def _check_same_spec(self, events: list[dict[str, Any]]) -> None:
        """Refuse to resume with a spec other than the one the kept rows were made with
        (an edited spec.toml, or flags that change it): the rows of two specs would mix.
        Where the cells run (``executor``) may change."""
        made = [
            e["spec"] for e in events if e["kind"] == "Started" and isinstance(e.get("spec"), dict)
        ]
        if not made:
            return
        try:
            before = _flat(RunSpec.from_dict(made[-1]).to_dict())
        except (ConfigError, TypeError, ValueError):
            return  # an older or damaged record: nothing to compare against
        now = _flat(self.spec.to_dict())
        changed = [
            k
            for k in sorted(set(before) | set(now))
            if not k.startswith("executor.") and before.get(k) != now.get(k)
        ]
        if changed:
            shown = ", ".join(f"{k} {before.get(k)!r} → {now.get(k)!r}" for k in changed[:3])
            more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
            raise ConfigError(
                "resume",
                str(self.path),
                f"the spec its rows were made with; this one differs ({shown}{more}): "
                "start a new run with --out elsewhere, or restore the run's spec",
            )

    # -- consuming events ----------------------------------------------------------

    def write(self, ev: Event) -> None:
        """Record one event (and update the CSVs / summary it affects)."""
        try:
            self._events.write(json.dumps(ev.to_json()) + "\n")
            self._events.flush()
        except OSError as e:  # a full disk, a file-size limit: an error naming the file
            raise OSError(e.errno, e.strerror, str(self.path / "events.jsonl")) from None
        if isinstance(ev, TableRow):
            self._add_row(ev)
        elif isinstance(ev, CellFinished):
            for table, row in self._pending.pop(ev.cell, []):
                self.tables.setdefault(table, []).append(row)
                self._dirty.add(table)
            self.done_cells.add(ev.cell)
            self.failed_cells.pop(ev.cell, None)
            self._flush_tables()
        elif isinstance(ev, CellFailed):
            self._pending.pop(ev.cell, None)
            self.failed_cells[ev.cell] = f"{ev.error}: {ev.message}"
        elif isinstance(ev, Summary):
            self.summary[ev.section] = to_jsonable(ev.data)
            self._flush_tables()
            self._write_summary()
        elif isinstance(ev, Finished):
            self.summary.update(to_jsonable(ev.summary))
            if self.failed_cells:  # the others finished; --resume reruns these
                self.summary["failed_cells"] = dict(self.failed_cells)
            self.close("partial" if self.failed_cells else "finished")
        elif isinstance(ev, Failed):
            self.summary["error"] = {"type": ev.error, "message": ev.message}
            self.close("cancelled" if ev.error == "Cancelled" else "failed")

    def _add_row(self, ev: TableRow) -> None:
        cols = TABLE_COLUMNS.get(ev.table)
        if cols is not None and set(ev.row) != set(cols):
            missing = sorted(set(cols) - set(ev.row))
            extra = sorted(set(ev.row) - set(cols))
            raise ConfigError(
                f"table {ev.table}",
                f"missing {missing}, extra {extra}",
                f"exactly {', '.join(cols)}",
            )
        if ev.cell:
            self._pending.setdefault(ev.cell, []).append((ev.table, ev.row))
        else:
            self.tables.setdefault(ev.table, []).append(ev.row)
            self._dirty.add(ev.table)

    def _flush_tables(self, all_tables: bool = False) -> None:
        for table in list(self.tables) if all_tables else sorted(self._dirty):
            rows = self.tables.get(table, [])
            cols = list(TABLE_COLUMNS.get(table, ()))
            for r in rows:
                cols.extend(k for k in r if k not in cols)
            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow({k: _cell(r.get(k)) for k in cols})
            atomic_write(self.path / f"{table}.csv", buf.getvalue())
        self._dirty.clear()

    def _write_summary(self) -> None:
        doc = {
            "status": self.status,
            "experiment": self.spec.experiment,
            "dataset": self.spec.data.name,
            **self.summary,
        }
        atomic_write(
            self.path / "summary.json",
            json.dumps(to_jsonable(doc), indent=2, sort_keys=False) + "\n",
        )

    def _write_env(self) -> None:
        atomic_write(self.path / "env.json", json.dumps(to_jsonable(self.env), indent=2) + "\n")

    def close(self, status: str = "interrupted") -> None:
        """Finish the directory: tables, summary and env (end time, status). Idempotent."""
        if self._events.closed:
            return
        self.status = status
        self._flush_tables()
        self._write_summary()
        self.env.update(end_time=_iso(), status=status, load_end=load_average())
        try:
            self._write_env()
        finally:
            try:
                self._events.close()
            except OSError:  # its failed write was raised already (``write``)
                pass
            self._lock.release()


def _iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _slug(name: str) -> str:
    """A data set name as a folder-name part: ``folder:/data/pets`` → ``folder-pets``."""
    kind, sep, path = name.partition(":")
    if not sep:
        return name
    tail = Path(path.rstrip("/\\")).name.rsplit(".", 1)[0]
    return kind + "-" + ("".join(c if c.isalnum() or c in "-_" else "_" for c in tail) or "data")


def default_run_dir(spec: RunSpec, root: str | Path | None = None) -> Path:
    """``<root>/<timestamp>-<experiment>-<dataset>`` under $MALLEABILITY_RUNS or ./runs.

    The folder is created here (``mkdir`` is the claim), so two runs started in the same
    second get ``…-2``, ``…-3`` instead of sharing one folder.
    """
    from engine.run.paths import runs_root

    base = runs_root(root)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{stamp}-{spec.experiment.replace(',', '+')}-{_slug(spec.data.name)}"
    from engine.run.paths import make_folder

    make_folder(base, "runs root")
    i = 1
    while True:
        p = base / (name if i == 1 else f"{name}-{i}")
        try:
            p.mkdir()
            return p
        except FileExistsError:
            i += 1
        except OSError as e:
            raise ConfigError(
                "runs root",
                str(base),
                f"a folder where run directories can be created ({e.strerror})",
            ) from None


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"train": {"epochs": 5}}`` → ``{"train.epochs": 5}`` (lists as tuples)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = tuple(v) if isinstance(v, list) else v
    return out
