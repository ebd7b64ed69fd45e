"""Benchmark: the whole ``spectrum`` experiment (spectra + kernel study) on MNIST, end to end.

    python benchmarks/bench_spectrum_study.py [--n-train 1000,3000,8900] [--reference REV] [--threads 2]

Runs ``malleability headless --experiment spectrum`` on ../shared/data/mnist (t10k, class-
balanced subsets; 8,900 is about the most t10k allows: its n_test shrinks to 20 there) in a subprocess
per size and prints wall seconds. With ``--reference REV`` the same command also runs on
the source tree of git revision REV (``git archive`` into a temp folder, imported through
PYTHONPATH), in the same invocation, so the ratio is measured under the same load; the
reference is skipped for sizes in ``--reference-max`` and above (the old kernel study
needs minutes there). Both runs' ``alignment.csv`` / ``ntk_spectrum.csv`` / ``spectrum.csv``
are then compared value by value (max relative difference per table).

Goals (issue #16): ≤ 30 s at n_train 3,000 and at 8,900 (spectrum of all rows; kernel
study on the first 3,000), 2 CPU cores.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
T10K_SMALLEST_CLASS = 892
"""Images of MNIST t10k's smallest class (digit 5)."""
MNIST = ROOT / ".." / "shared" / "data" / "mnist"


def run(src: Path, n_train: int, n_test: int, out: Path, threads: int) -> float:
    """Wall seconds of one headless spectrum run with the engine from ``src``."""
    env = dict(
        os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads)
    )
    cmd = [
        sys.executable,
        "-c",
        "from malleability_tui.cli.main import main; main()",
        "headless",
        "--dataset",
        "mnist",
        "--data-dir",
        str(MNIST),
        "--experiment",
        "spectrum",
        "--seeds",
        "0",
        "--n-train",
        str(n_train),
        "--n-test",
        str(n_test),
        "--out",
        str(out),
        "--quiet",
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, cwd=src, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def read(path: Path, keys: tuple[str, ...]) -> dict[tuple[str, ...], dict[str, float]]:
    """Rows of a CSV keyed by ``keys``; numeric columns as floats."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            vals = {}
            for k, v in r.items():
                if k in keys:
                    continue
                try:
                    vals[k] = float(v)
                except ValueError:
                    continue
            out[tuple(r[k] for k in keys)] = vals
    return out


def max_rel_diff(a: Path, b: Path, keys: tuple[str, ...]) -> tuple[float, int, str]:
    """(max |x−y|/max(|x|, |y|, 1e-300) over matching cells, rows compared, where the max is)."""
    ra, rb = read(a, keys), read(b, keys)
    worst, n, where = 0.0, 0, ""
    for key, va in ra.items():
        vb = rb.get(key)
        if vb is None:
            continue
        n += 1
        for col, x in va.items():
            y = vb.get(col, math.nan)
            if math.isnan(x) and math.isnan(y):
                continue
            if math.isinf(x) and x == y:
                continue
            rel = abs(x - y) / max(abs(x), abs(y), 1e-300)
            if rel > worst:
                worst, where = rel, f"{'/'.join(key)}:{col}"
    return worst, n, where


TABLES = {
    "alignment.csv": ("dataset", "kernel", "target", "ridge"),
    "ntk_spectrum.csv": ("dataset", "kernel"),
    "spectrum.csv": ("dataset",),
}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n-train", default="1000,3000,8900", help="comma-separated training sizes")
    ap.add_argument("--n-test", type=int, default=100, help="test images (class-balanced)")
    ap.add_argument(
        "--reference", default=None, help="git revision to time in the same run, e.g. main"
    )
    ap.add_argument(
        "--reference-max", type=int, default=1001, help="skip the reference at n_train ≥ this"
    )
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if (
        not (MNIST / "t10k-images-idx3-ubyte.gz").exists()
        and not (MNIST / "t10k-images-idx3-ubyte").exists()
    ):
        sys.exit(f"no MNIST under {MNIST.resolve()}")
    sizes = [int(s) for s in args.n_train.split(",") if s.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        ref_src = None
        if args.reference:
            ref_src = tmpd / "ref"
            ref_src.mkdir()
            arch = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.reference], check=True, capture_output=True
            )
            subprocess.run(["tar", "-x", "-C", str(ref_src)], input=arch.stdout, check=True)
        print(
            f"spectrum experiment, MNIST t10k, n_test {args.n_test}, {args.threads} threads, "
            f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}; "
            f"load average at start {os.getloadavg()[0]:.2f}"
        )
        print(
            f"{'n_train':>7} {'ours s':>8} {'ref s':>8} {'ratio':>6}  max rel. diff (alignment / ntk_spectrum / spectrum)"
        )
        for n in sizes:
            ours = tmpd / f"ours-{n}"
            # t10k's smallest class (5) has 892 images: class-balanced n_train + n_test ≤ 8,920
            nt = max(10, min(args.n_test, 10 * T10K_SMALLEST_CLASS - n))
            if nt != args.n_test:
                print(
                    f"note: n_train {n}: n_test {nt} (t10k holds {T10K_SMALLEST_CLASS} of class 5)"
                )
            t_ours = run(ROOT, n, nt, ours, args.threads)
            t_ref, diffs = math.nan, ""
            if ref_src is not None and n < args.reference_max:
                ref = tmpd / f"ref-{n}"
                t_ref = run(ref_src, n, nt, ref, args.threads)
                parts = []
                for table, keys in TABLES.items():
                    d, rows, where = max_rel_diff(ours / table, ref / table, keys)
                    parts.append(f"{d:.1e} ({rows} rows{', at ' + where if d > 1e-8 else ''})")
                diffs = " / ".join(parts)
            ratio = t_ref / t_ours if math.isfinite(t_ref) else math.nan
            print(f"{n:7d} {t_ours:8.1f} {t_ref:8.1f} {ratio:6.1f}  {diffs}", flush=True)
        print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
