"""Shipped κ sweeps (docs/results/index.md#kappa): a finished ``kappa_sweep`` run imported into
``docs/results/kappa/<dataset>-<classes>-<n_train>/`` and the page section drawn from those files
alone (docs/protocol.md#kappa-sweep); ``engine.reproduce.page`` renders it.

Layout of one folder:

* ``kappa_sweep.csv`` (one row per α and model: κ(G), κ_d, κ(G)³, the claim-1 slope and the
  flip rate with their intervals, the ratio, cell counts and the guard flags),
  ``kappa_ntk.csv`` and ``kappa_flips.csv`` (the cells behind them), copied from the run;
* ``spec.toml``: the run's spec, so ``malleability headless --config spec.toml`` reruns it;
* ``summary.json``: the run's ``kappa_sweep`` summary (the fits' headline lines);
* ``run.json``: the command (``malleability headless --config spec.toml``), commit, start and
  end times, wall seconds and load where the run recorded them;
* ``figures/<folder>_kappa_sweep.png``: drawn by the front end (``malleability results add``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.run.paths import atomic_write

KAPPA_TABLES = ("kappa_sweep", "kappa_ntk", "kappa_flips")
"""The tables copied: the per-α points and the cells behind them."""

KAPPA_DIR = "kappa"
"""The sub-folder of the results folder that holds the κ sweeps."""


def is_kappa_run(run: Path) -> bool:
    """Whether ``run`` is a run directory of the ``kappa_sweep`` experiment."""
    return (run / "kappa_sweep.csv").is_file() and (run / "spec.toml").is_file()


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(
            "run", str(path.parent), f"a finished kappa_sweep run ({path.name}: {e})"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError("run", str(path.parent), f"a finished kappa_sweep run ({path.name})")
    return data


def _seconds(env: dict[str, Any]) -> float | None:
    from datetime import datetime

    try:
        a = datetime.strptime(str(env["start_time"]), "%Y-%m-%dT%H:%M:%S%z")
        b = datetime.strptime(str(env["end_time"]), "%Y-%m-%dT%H:%M:%S%z")
    except (KeyError, ValueError):
        return None
    return (b - a).total_seconds()


def folder_name(spec: Any) -> str:
    """``<dataset>-<classes>-n<n_train>`` (classes joined by ``v``, ``all`` for every class)."""
    cl = spec.data.classes
    classes = "v".join(str(c) for c in cl) if cl else "all"
    return f"{spec.data.name}-{classes}-n{spec.kappa.n_train}"


def import_kappa(run: Path, into: Path) -> Path:
    """Copy a finished ``kappa_sweep`` run into ``into/kappa/<folder_name>/`` (the module
    docstring's layout, figures aside; a folder of the same name is replaced whole)."""
    from engine.run.spec import RunSpec

    env, summary = _json(run / "env.json"), _json(run / "summary.json")
    if env.get("status") != "finished" or "kappa_sweep" not in summary:
        raise ConfigError("run", str(run), "a finished kappa_sweep run (env.json says it is not)")
    spec = RunSpec.load(run / "spec.toml")
    folder = into / KAPPA_DIR / folder_name(spec)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for t in KAPPA_TABLES:
        if (run / f"{t}.csv").is_file():
            shutil.copyfile(run / f"{t}.csv", folder / f"{t}.csv")
    shutil.copyfile(run / "spec.toml", folder / "spec.toml")
    keep = {"headline": summary["kappa_sweep"].get("headline", [])}
    atomic_write(folder / "summary.json", json.dumps(keep, indent=2) + "\n")
    info = {
        "command": "malleability headless --config spec.toml",
        "commit": env.get("commit"),
        "start_time": env.get("start_time"),
        "end_time": env.get("end_time"),
        "seconds": _seconds(env),
        "load_start": env.get("load_start"),
        "load_end": env.get("load_end"),
        "threads": env.get("threads"),
        "device": env.get("device"),
    }
    atomic_write(folder / "run.json", json.dumps(info, indent=2) + "\n")
    return folder


def kappa_folders(root: Path) -> list[Path]:
    """The committed κ-sweep folders under ``root``, sorted."""
    return sorted(p.parent for p in (root / KAPPA_DIR).glob("*/kappa_sweep.csv"))
