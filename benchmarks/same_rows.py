"""Same specs, two source trees, identical CSVs? The check behind a refactor's "every number
the tool prints is unchanged" (issue: the house by direction).

    git worktree add --detach /tmp/before 8e35194     # the tree before the move
    python benchmarks/same_rows.py --before /tmp/before [--after .]

Runs each small spec below with ``malleability headless`` from each tree (PYTHONPATH set to
the tree; one torch thread, so the float32 rows do not depend on thread scheduling), then
compares every CSV of the run directory cell by cell on the columns both trees write (a
column added later, such as ``epochs_run``, is listed, not compared; wall-clock columns
``seconds``/``*_seconds`` are skipped). Prints one line per (spec, table): identical, or
the largest difference and where. Exit status 1 when any compared cell differs.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TINY = ["--dataset", "digits", "--n-train", "60", "--n-test", "30", "--seeds", "0"]
SPECS: dict[str, list[str]] = {
    "train": [*TINY, "--experiment", "train", "--widths", "8,32", "--epochs", "15"],
    "ntk": [*TINY, "--experiment", "ntk", "--widths", "8,32", "--epochs", "15"],
    "spectrum": [*TINY, "--experiment", "spectrum"],
    "flip": [*TINY, "--experiment", "flip", "--widths", "16", "--epochs", "15"],
    "landscape": [*TINY, "--experiment", "landscape", "--widths", "16", "--epochs", "15"],
    "influence_check": [
        *TINY,
        "--classes",
        "3,8",
        "--experiment",
        "influence_check",
        "--widths",
        "16",
        "--epochs",
        "10",
    ],
}
TIMING = ("seconds",)


def run(tree: Path, args: list[str], out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "COLUMNS": "80"}
    code = "from malleability_tui.cli.main import main; main()"
    cmd = [sys.executable, "-c", code, "headless", *args, "--out", str(out)]
    res = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(args)} failed:\n{res.stderr[-2000:]}")


def read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def diff(a: str, b: str) -> float:
    """0 for equal cells; the absolute difference of two numbers; inf for other text."""
    if a == b:
        return 0.0
    try:
        x, y = float(a), float(b)
    except ValueError:
        return math.inf
    if math.isnan(x) and math.isnan(y):
        return 0.0
    return abs(x - y)


def compare(before: Path, after: Path) -> tuple[list[str], bool]:
    lines, same = [], True
    for csv_path in sorted(after.glob("*.csv")):
        old = before / csv_path.name
        if not old.exists():
            lines.append(f"  {csv_path.name}: new table (not compared)")
            continue
        a, b = read(old), read(csv_path)
        cols_a, cols_b = list(a[0]) if a else [], list(b[0]) if b else []
        common = [c for c in cols_b if c in cols_a and not c.endswith(TIMING)]
        added = [c for c in cols_b if c not in cols_a]
        if len(a) != len(b):
            lines.append(f"  {csv_path.name}: {len(a)} rows before, {len(b)} after")
            same = False
            continue
        worst, where = 0.0, ""
        for i, (ra, rb) in enumerate(zip(a, b)):
            for c in common:
                d = diff(ra[c], rb[c])
                if d > worst:
                    worst, where = d, f"row {i + 1} {c}: {ra[c]} → {rb[c]}"
        extra = f" (new columns, not compared: {', '.join(added)})" if added else ""
        if worst == 0.0:
            lines.append(
                f"  {csv_path.name}: identical, {len(b)} rows × {len(common)} columns{extra}"
            )
        else:
            same = False
            lines.append(f"  {csv_path.name}: DIFFERS, largest {worst:.3g} at {where}{extra}")
    return lines, same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the older source tree")
    ap.add_argument("--after", type=Path, default=Path("."), help="the newer tree (default .)")
    ap.add_argument("--only", default="", help="comma-separated spec names (default all)")
    a = ap.parse_args()
    names = [n for n in SPECS if not a.only or n in a.only.split(",")]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            dirs = []
            for label, tree in (("before", a.before), ("after", a.after)):
                out = Path(tmp) / f"{name}-{label}"
                run(tree.resolve(), SPECS[name], out)
                dirs.append(out)
            lines, same = compare(*dirs)
            ok &= same
            print(f"{name}: {'identical' if same else 'DIFFERS'}")
            print("\n".join(lines))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
