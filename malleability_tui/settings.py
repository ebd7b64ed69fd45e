"""What the app needs from outside (``Settings``) and the form's first spec.

Tests pass tmp folders and canned data choices; ``malleability-tui`` takes the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.run.paths import runs_root as default_runs_root
from engine.run.spec import RunSpec
from malleability_tui.widgets.setup_form import DataChoice


@dataclass
class Settings:
    """What the app needs from outside; tests pass tmp folders and canned data choices."""

    runs_root: Path = field(default_factory=default_runs_root)
    export_root: Path = field(default_factory=lambda: Path("export"))
    spec: RunSpec | None = None
    data_root: str | None = None
    data_choices: list[DataChoice] | None = None
    experiments: list[str] | None = None
    refresh_interval: float = 0.5
    """Seconds between panel redraws (and status-clock updates) while events arrive. A
    redraw of the live panel costs ~20 ms of UI CPU; at 0.2 s that took ~0.2 of a core
    from training on 2 cores, at 0.5 s ~0.08 (benchmarks/bench_tui_latency.py)."""
    clock: bool = True
    """Show elapsed time / ETA (off in snapshot tests, which must not depend on time)."""
    open_run: str | None = None
    """A run directory to open at start."""
    flops_per_s: float | None = None
    """This machine's matmul rate for run-time estimates (None: measured once, 0.1 s)."""
    subset_counts: Any = None
    """(data set, data dir) → class counts for the form's checks (None: the engine's)."""
    freeze_heap: bool = False
    """Take the long-lived heap out of the collector's full passes after start-up and after
    the first job's imports (``freeze_startup_heap``). ``malleability-tui`` sets it; tests,
    which share one process, leave its collector alone."""


def experiment_names() -> list[str]:
    """The registered experiments' names (the form's choices); [] when the registry fails."""
    try:
        from engine.experiments.registry import describe

        return [d["name"] for d in describe()]
    except Exception:  # noqa: BLE001 - the form still works, validation will say what is wrong
        return []


def first_spec(runs_root: Path) -> RunSpec:
    """The form's spec when none is given: the quick preset on a first launch (no runs yet:
    a first run should take minutes, not hours), else the paper's defaults."""
    from engine.reproduce.presets import apply_quick

    try:
        has_runs = any((d / "spec.toml").is_file() for d in runs_root.iterdir())
    except OSError:
        has_runs = False
    return RunSpec() if has_runs else apply_quick(RunSpec())
