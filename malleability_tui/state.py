"""The app's model of one run: everything the panels show, built from events.

A live run and a run reopened from disk go through the same ``apply``: reopening
replays ``events.jsonl`` (which also holds the artifacts the CSVs do not), so
every panel fills the same way. Pure Python: no Textual, unit-tested alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.run.events import (
    Artifact,
    CellFinished,
    Event,
    Failed,
    Finished,
    Log,
    Metric,
    Progress,
    Started,
    Summary,
    TableRow,
    from_json,
)

MAX_LOG = 2000


@dataclass
class RunState:
    """Tables, artifacts, live series, progress and status of one run."""

    run_dir: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    status: str = "idle"
    """idle, running, finished, failed, cancelled, interrupted."""
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    artifacts: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    """name → [(cell, data)] in arrival order."""
    metrics: dict[str, dict[str, list[tuple[int, float]]]] = field(default_factory=dict)
    """cell → metric name → [(step, value)]."""
    summary: dict[str, Any] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)
    """(level, message)."""
    progress: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    """task (experiments, sweep, cell, batch: the steps of a long epoch) → (done, total,
    message)."""
    current_cell: str = ""
    progress_cell: str = ""
    """The cell of the latest ``cell`` progress (``train/...``: its unit is epochs)."""
    done_cells: list[str] = field(default_factory=list)
    error: tuple[str, str] | None = None
    started_at: float | None = None
    ended_at: float | None = None
    revision: int = 0
    """Bumped on every change; panels re-render when it moves."""
    damage: list[str] = field(default_factory=list)
    """"damaged run: FILE: what" for each file of a reopened run that could not be read."""
    reproduction: dict[str, Any] = field(default_factory=dict)
    """The reproduction this run belongs to (or is): ``path``, ``summary`` (the claims
    checklist) and ``parts`` (reproduce.json's sub-runs); empty for a run of its own."""
    _weights: list[float] | None = field(default=None, repr=False, compare=False)

    def apply(self, ev: Event) -> None:
        """Fold one event into the state."""
        self.revision += 1
        if isinstance(ev, Started):
            if not self.spec:
                self.spec = dict(ev.spec)
            self.status = "running"
            self.started_at = self.started_at or ev.time
        elif isinstance(ev, Progress):
            # A new experiment / sweep cell makes the finer counters of the last one stale
            # (a landscape cell must not show the epochs of the last training cell).
            if ev.task == "experiments":
                self.progress.pop("sweep", None)
                self.progress.pop("cell", None)
            elif ev.task == "sweep":
                self.progress.pop("cell", None)
            if ev.task != "batch":  # a long epoch's steps: until the epoch (or more) moves
                self.progress.pop("batch", None)
            self.progress[ev.task] = (ev.done, ev.total, ev.message)
            if ev.task == "sweep":  # cells running in parallel (executor ray), for the status bar
                self.progress["in_flight"] = (ev.running, 0, "")
            if ev.task == "cell" and ev.cell:
                self.current_cell = ev.cell
                self.progress_cell = ev.cell
        elif isinstance(ev, Metric):
            key = ev.cell or "-"
            self.metrics.setdefault(key, {}).setdefault(ev.name, []).append((ev.step, ev.value))
            if ev.cell:
                self.current_cell = ev.cell
        elif isinstance(ev, TableRow):
            self.tables.setdefault(ev.table, []).append(dict(ev.row))
        elif isinstance(ev, CellFinished):
            self.done_cells.append(ev.cell)
        elif isinstance(ev, Artifact):
            self.artifacts.setdefault(ev.name, []).append((ev.cell, ev.data))
        elif isinstance(ev, Log):
            self.logs.append((ev.level, ev.message))
            del self.logs[:-MAX_LOG]
        elif isinstance(ev, Summary):
            self.summary[ev.section] = ev.data
        elif isinstance(ev, Finished):
            self.summary.update(ev.summary or {})
            self.status = "finished"
            self.ended_at = ev.time
        elif isinstance(ev, Failed):
            self.error = (ev.error, ev.message)
            self.status = "cancelled" if ev.error == "Cancelled" else "failed"
            self.ended_at = ev.time
            self.logs.append(("error", f"{ev.error}: {ev.message}"))

    def log(self, message: str, level: str = "info") -> None:
        """A message from the app itself (export done, job started...)."""
        self.logs.append((level, message))
        self.revision += 1

    # -- views used by several panels ---------------------------------------------

    def artifact(self, name: str) -> Any:
        """The latest artifact ``name`` (or None)."""
        items = self.artifacts.get(name)
        return items[-1][1] if items else None

    def headlines(self) -> list[str]:
        """Every ``headline`` line of the summary, prefixed by its section."""
        out = []
        for sec, data in self.summary.items():
            lines = data.get("headline") if isinstance(data, dict) else None
            if lines:
                for ln in [lines] if isinstance(lines, str) else lines:
                    out.append(f"{sec}: {ln}")
        return out

    def run_fraction(self) -> float | None:
        """How much of the whole run is done: the experiment, sweep and cell counters,
        each experiment weighted by its planned work (``experiment_weights``), its cells
        equally within it; None before the first counter."""
        if "experiments" not in self.progress:
            return None
        i, n, _ = self.progress["experiments"]
        if n <= 0:
            return None
        part = 0.0
        if "sweep" in self.progress and i < n:
            j, m, _ = self.progress["sweep"]
            part = j / m if m > 0 else 0.0
            if "cell" in self.progress and j < m:
                k, e, _ = self.progress["cell"]
                part += (k / e if e > 0 else 0.0) / m
        w = self.experiment_weights()
        if len(w) != n:
            return min(1.0, (i + part) / n)
        return min(1.0, sum(w[:i]) + (w[i] * part if i < n else 0.0))

    def experiment_weights(self) -> list[float]:
        """Each planned experiment's share of the run, in run order: its estimated time in
        the model ``reproduce --dry-run`` prints (engine/experiments/estimate.py), plus
        2 % of the run each for what that model leaves out; [] when the spec is unknown."""
        if not self.spec:
            return []  # not known yet: nothing cached
        if self._weights is None:
            from engine.errors import EngineError
            from engine.experiments.estimate import planned_shares
            from engine.run.spec import RunSpec

            try:
                shares = planned_shares(RunSpec.from_dict(self.spec))
            except (EngineError, KeyError, TypeError, ValueError):
                shares = {}  # a damaged or foreign spec: equal shares
            raw = [v + 0.02 for v in shares.values()]
            self._weights = [r / sum(raw) for r in raw] if raw else []
        return self._weights

    def live_cell(self) -> str:
        """The cell training now, or the last one that reported a metric."""
        if self.current_cell in self.metrics:
            return self.current_cell
        cells = [c for c in self.metrics if c != "-"]
        return cells[-1] if cells else ""


def load_run_state(path: str | Path) -> RunState:
    """Rebuild the state of a past run from its directory (events.jsonl, else the CSVs)."""
    from engine.run.runs import read_run

    p = Path(path)
    data = read_run(p, partial=True)
    st = RunState(run_dir=str(p), spec=data["spec"], env=data.get("env", {}))
    st.damage = list(data["damage"])
    ev_file = p / "events.jsonl"
    replayed = False
    if ev_file.exists():
        bad = 0
        for line in ev_file.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                st.apply(from_json(json.loads(line)))
                replayed = True
            except (ValueError, KeyError, TypeError, AttributeError):
                bad += 1  # a line cut by an interruption (or damage)
        if bad > 1:
            st.damage.append(f"damaged run: {ev_file}: {bad} unreadable lines skipped")
    if not replayed:
        st.tables = {k: [dict(r) for r in v] for k, v in data["tables"].items()}
        st.summary = dict(data.get("summary", {}))
    # The directory's status is the truth (a killed run never wrote Finished/Failed).
    status = st.env.get("status") or data.get("summary", {}).get("status")
    if status:
        st.status = status
    elif st.status == "running":
        st.status = "interrupted"
    if not st.summary:
        st.summary = {k: v for k, v in data.get("summary", {}).items() if isinstance(v, dict)}
    return st
