"""Past runs: the runs root, finding, listing, reading and exporting run directories.

The one place every front end (the ``malleability`` CLI, the TUI) asks where runs live
and what is there; the run store (``store.py``) writes a run, this module reads them back.

* ``runs_root``: the one resolver of the runs folder (an explicit folder, else
  ``$MALLEABILITY_RUNS``, else ``./runs``);
* ``find_run``: a run (or reproduce) directory given as a path or a name under the root;
* ``list_runs``: one summary dict per run directory under a root, newest first;
* ``collect``: the runs of a run or reproduce directory, with the reproduce summary;
* ``export_run``: copy a run's CSVs, or write one JSON of everything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from engine.errors import ConfigError
from engine.results.tables import TABLES
from engine.run.lock import live_owner
from engine.run.paths import RUN_MARKERS, atomic_write, display_name, runs_root

RunData = dict[str, Any]
"""A run directory as ``read_run`` returns it (path, spec, env, summary, tables, damage)."""


def is_run_dir(p: Path) -> bool:
    return any((p / name).exists() for name in RUN_MARKERS)


def is_reproduce_dir(p: Path) -> bool:
    return (p / "reproduce.json").exists()


def find_run(
    run: str | Path, root: str | Path | None = None, *, reproduce: bool = False
) -> Path | None:
    """The run directory ``run`` names: a path, else a name under ``runs_root(root)``.

    With ``reproduce`` a reproduce folder (``reproduce.json``) is accepted too, and is
    preferred over a run directory of the same name. None when nothing matches.
    """
    p = Path(run)
    candidates = [p, runs_root(root) / run]
    if reproduce:
        for c in candidates:
            if is_reproduce_dir(c):
                return c
    for c in candidates:
        if is_run_dir(c):
            return c
    return None


class RunListing(TypedDict):
    """One line of ``list_runs``: what the CLI's ``runs list`` and the TUI's Runs panel show."""

    name: str
    path: str
    experiment: str
    dataset: str
    status: str
    """The run store's status (``run_status``), or ``damaged``."""
    start: str
    device: str
    damage: str
    """The damaged files' problems, ``; ``-joined ("" for an intact run)."""


def list_runs(root: str | Path | None = None) -> list[RunListing]:
    """Summaries of the run directories under ``runs_root(root)``, newest first.

    A damaged run is listed too, with ``damage`` (its first problem) and status "damaged".
    """
    base = runs_root(root)
    out: list[RunListing] = []
    if not base.is_dir():
        return out
    for d in sorted(base.iterdir(), reverse=True):
        if not is_run_dir(d):
            continue
        data = read_run(d, partial=True)
        summ, env = data["summary"], data["env"]
        damage = data["damage"]
        out.append(
            RunListing(
                name=d.name,
                path=str(d),
                experiment=str(summ.get("experiment", data["spec"].get("experiment", "?"))),
                dataset=str(summ.get("dataset", data["spec"].get("data", {}).get("name", "?"))),
                status="damaged" if damage else str(env.get("status", "?")),
                start=str(env.get("start_time", "")),
                device=str(env.get("device", "")),
                damage="; ".join(damage),
            )
        )
    return out


def collect(path: Path) -> tuple[dict[str, Any] | None, list[tuple[str, RunData]]]:
    """(reproduce summary or None, [(label, read_run data)]) for a run or reproduce folder."""
    from engine.run.validate import DamagedRun, read_json_object

    if is_reproduce_dir(path):
        meta = read_json_object(path / "reproduce.json")
        parts = meta.get("parts")
        if not isinstance(parts, list) or not all(
            isinstance(p, dict) and isinstance(p.get("key"), str) for p in parts
        ):
            raise DamagedRun(path / "reproduce.json", "parts must be a list of objects with a key")
        summ_f = path / "summary.json"
        summ = read_json_object(summ_f) if summ_f.exists() else {}
        runs = [(p["key"], read_run(path / p["key"])) for p in parts if is_run_dir(path / p["key"])]
        return summ, runs
    return None, [(display_name(path.name), read_run(path))]


EXPORT_FORMATS = ("csv", "json")


def export_run(path: Path, fmt_: str, to: Path | None = None, *, force: bool = False) -> list[Path]:
    """Copy a run's CSVs (csv) or write one JSON of everything (json) into ``to``.

    ``to`` defaults to ``export/<run name>``, so two runs never mix. A folder that already
    holds files (csv) or an existing JSON target is refused unless ``force``. The run is
    read and validated first: a damaged run writes nothing.
    """
    from engine.run.paths import check_folder_target, make_folder

    if fmt_ not in EXPORT_FORMATS:
        raise ConfigError("format", fmt_, "csv or json")
    to = Path("export") / path.name if to is None else to
    check_folder_target(to, "to")
    src, dst = path.resolve(), to.resolve()
    if dst == src or src in dst.parents:
        raise ConfigError("to", str(to), "a folder outside the run directory")
    data = read_run(path)
    if fmt_ == "csv":
        sources = [
            f
            for f in sorted(path.glob("*.csv"))
            + [path / "spec.toml", path / "summary.json", path / "env.json"]
            if f.is_file()
        ]
        if not force and to.is_dir() and (held := sum(1 for _ in to.iterdir())):
            raise ConfigError(
                "to",
                str(to),
                f"a folder without an earlier export: it holds {held} files "
                "(pass --force to overwrite them, or export to another folder)",
            )
        make_folder(to, "to")
        written = []
        for f in sources:
            if f.suffix == ".csv":
                _copy_csv_for_spreadsheets(f, to / f.name)
            else:  # not shutil.copy2: its error on a full disk names the source file
                with open(f, encoding="utf-8", newline="") as src_file:
                    atomic_write(to / f.name, src_file.read())
            written.append(to / f.name)
        return written
    target = to / f"{path.name}.json"
    if target.exists() and not force:
        raise ConfigError(
            "to", str(target), "a file that does not exist yet (pass --force to overwrite it)"
        )
    make_folder(to, "to")
    atomic_write(target, json.dumps(data, indent=2) + "\n")
    return [target]


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""A spreadsheet reads a cell starting with one of these as a formula (CSV injection)."""


def spreadsheet_safe(cell: str) -> str:
    """``cell`` as a spreadsheet shows it as text: a text cell that would start a formula
    (``=HYPERLINK(…)``) gets a leading ``'``; numbers (``-0.5``, ``-inf``) stay numbers."""
    if not cell.startswith(FORMULA_START):
        return cell
    try:
        float(cell)
        return cell
    except ValueError:
        return "'" + cell


def _copy_csv_for_spreadsheets(src: Path, dst: Path) -> None:
    """Copy a run's CSV for export, its text cells guarded by ``spreadsheet_safe`` (the run's
    own CSV is never changed)."""
    import csv
    import io

    with open(src, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(
        [spreadsheet_safe(c) for c in row] for row in rows
    )
    atomic_write(dst, buf.getvalue())


def run_status(path: str | Path, recorded: str | None) -> str:
    """The status readers show: a run recorded as ``running`` with no live writer was killed."""
    if recorded == "running" and live_owner(path) is None:
        return "interrupted"
    return recorded or "?"


def read_run(path: str | Path, *, partial: bool = False) -> dict[str, Any]:
    """Load a run directory: spec, env, summary and every CSV table (as lists of dicts).

    Every file is validated (``engine.run.validate``); the first damaged one
    raises ``DamagedRun`` ("damaged run: FILE: what is wrong"). With ``partial`` the damaged
    files are left out instead and listed under ``"damage"`` (the TUI opens what it can).
    """
    from engine.run.validate import (
        DamagedRun,
        check_env,
        check_summary,
        read_csv_table,
        read_json_object,
        read_spec,
    )

    p = Path(path)
    if not is_run_dir(p):
        raise ConfigError("run", str(p), "a run directory (it has spec.toml)")
    damage: list[str] = []

    def guard(fn: Any, default: Any) -> Any:
        try:
            return fn()
        except DamagedRun as e:
            if not partial:
                raise
            damage.append(str(e))
            return default

    out: dict[str, Any] = {
        "path": str(p),
        "spec": guard(lambda: read_spec(p / "spec.toml").to_dict(), {}),
        "tables": {},
    }
    for name, check in (("env", check_env), ("summary", check_summary)):
        f = p / f"{name}.json"
        out[name] = (
            guard(lambda f=f, check=check: check(read_json_object(f), f), {}) if f.exists() else {}
        )
    out["env"]["status"] = run_status(p, out["env"].get("status", out["summary"].get("status")))
    for f in sorted(p.glob("*.csv")):
        rows = guard(lambda f=f: read_csv_table(f, TABLES.get(f.stem)), None)
        if rows is not None:
            out["tables"][f.stem] = rows
    out["damage"] = damage
    return out


def train_curves(path: str | Path) -> dict[str, tuple[list[float], list[float]]]:
    """cell → (epochs, training loss) from a run's events.jsonl (the live ``train_loss``
    metric; the CSVs keep only the last value). Empty when the run has no such events; a
    line cut by an interruption is skipped."""
    import json

    ev = Path(path) / "events.jsonl"
    out: dict[str, tuple[list[float], list[float]]] = {}
    if not ev.is_file():
        return out
    for line in ev.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"Metric"' not in line or '"train_loss"' not in line:
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("kind") == "Metric" and e.get("name") == "train_loss":
            xs, ys = out.setdefault(str(e.get("cell", "")), ([], []))
            xs.append(float(e["step"]))
            ys.append(float(e["value"]))
    return out
