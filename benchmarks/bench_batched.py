"""Benchmark: batched training of many same-shaped networks against training them one by one.

    python benchmarks/bench_batched.py [--parts influence,ntk,flops,chunks] [--seeds 0,1,2]
                                       [--widths 16,64,256,1024] [--networks 8] [--threads 2]
                                       [--device cpu|cuda] [--runs batched,separate,separate1]

Every part runs the separate path and the batched one side by side in the same run, so
load hits both alike; speeds are ratios against the reference measured here, with the
absolute figures beside them.

* ``influence``: ``malleability headless --dataset mnist --data-dir ../shared/data/mnist
  --classes 3,8 --experiment influence_check --seeds S`` at its defaults, three ways (each
  a subprocess, torch threads set by OMP_NUM_THREADS): the separate trainer
  (``train.batch_networks = 1``) on 2 threads (the reference) and on 1 thread, and the
  batched trainer (the default) on 2 threads. Prints wall times, and per column of
  ``influence_check.csv`` the largest difference from the reference over matching rows
  (model, seed, estimator, ridge): 1 vs 2 threads is a change that should not matter, so
  it is the float32 noise floor the batched rows are judged by. ``--runs`` picks which of
  the three run (``benchmarks/gpu_check.sh`` runs batched and separate on CUDA, where
  threads do not apply).
* ``ntk``: ``malleability headless --quick --experiment ntk --seeds S`` (digits, until
  converged: its seeds' networks and linearized twins trained side by side, one call per
  (kind, width), ``RunContext.plan_batches``, forced: every step here is under
  ``MIN_STEP_MACS``, and on a CPU the default keeps them separate) the same three ways, and per column of
  ``ntk_distance.csv`` the largest difference from the reference over rows matched by
  (model, width, seed).
* ``flops``: ``--networks`` networks of width m (MNIST 3 vs 8, n 500, 2L-ReLU, Adam, batch
  128, 5 epochs) trained one by one (``engine.train.train``) and batched
  (``engine.train.batched.train_batched``); the achieved training FLOP rate (forward and
  weight-gradient matmuls, 4·n·d·m a network-epoch) against ``bench_train.py``'s probe,
  the same two matmuls of one network's step timed back to back.
* ``overhead``: the fixed cost of one step on a network too small for its FLOPs to count
  (``estimate.probe_step_seconds``' shape: d 16, m 8, batch 16, n 64, Adam): a batched
  step of B networks in separate steps, B = 1, 2, 3, 8, 41 (``work.BATCHED_STEP``).
* ``chunks``: seconds per network-epoch of influence_check's shape (n 200, width 256, 2L-ReLU
  and MLP-Attn refit) for chunk sizes 1 … 128 (how ``BATCH_NETWORKS`` was chosen).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# isort: off
import engine  # noqa: E402,F401  (first: it sets OMP_WAIT_POLICY before torch loads)
import torch  # noqa: E402

# isort: on
from engine.data import load_dataset  # noqa: E402
from engine.models import build_model  # noqa: E402
from engine.run.spec import TrainSpec  # noqa: E402
from engine.train import train  # noqa: E402
from engine.train.batched import train_batched  # noqa: E402

DATA = ROOT / ".." / "shared" / "data" / "mnist"
NUMERIC = ("spearman", "spearman_p", "sign_agreement", "n_points", "converged", "above_chance")


DEVICE = torch.device("cpu")
"""Where the ``flops`` part trains and the ``influence`` runs run (``--device``)."""


def sync() -> None:
    """Wait for the device's queued work (CUDA runs asynchronously; a timer needs this)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


INFLUENCE = ["--dataset", "mnist", "--data-dir", str(DATA), "--classes", "3,8",
             "--experiment", "influence_check"]  # fmt: skip
NTK = ["--dataset", "digits", "--quick", "--experiment", "ntk"]
NTK_COLUMNS = (
    "ntk_distance", "ntk_distance_rel", "lin_distance", "lin_distance_rel", "lin_test_accuracy",
    "kernel_distance_init", "kernel_distance_final", "kernel_drift", "test_accuracy",
    "train_loss", "converged", "above_chance",
)  # fmt: skip


def influence_run(
    seeds: str,
    batch_networks: int,
    threads: int,
    out: Path,
    args: list[str] = INFLUENCE,
    force: bool = False,
) -> float:
    """Wall seconds of one headless run (default: influence_check); its CSVs land in ``out``.
    ``force``: batch the seeds however small their steps (``CPU_MIN_STEP_MACS`` 0)."""
    cfg = out.with_suffix(".toml")
    cfg.write_text(f"[train]\nbatch_networks = {batch_networks}\n")
    code = "from malleability_tui.cli.main import main; main()"
    if force:
        code = "import engine.train.batched as b; b.CPU_MIN_STEP_MACS = 0; " + code
    cmd = [
        sys.executable, "-c", code, "headless",
        *args, "--seeds", seeds, "--config", str(cfg), "--out", str(out), "-q",
        "--device", DEVICE.type,
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    t0, c0 = time.perf_counter(), _child_cpu()
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    LAST_CPU[0] = _child_cpu() - c0
    return time.perf_counter() - t0


LAST_CPU = [0.0]
"""CPU seconds (user + system) of the last ``influence_run``: under another job's load the
wall time stretches, the CPU time far less."""


def _child_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def read_rows(out: Path) -> dict[tuple[str, ...], dict[str, str]]:
    with open(out / "influence_check.csv", newline="") as f:
        return {(r["model"], r["seed"], r["estimator"], r["ridge"]): r for r in csv.DictReader(f)}


def drift(a: dict, b: dict, columns: tuple[str, ...] = NUMERIC) -> dict[str, float]:
    """Per column: the largest |a − b| over the rows both have (booleans as 0/1)."""
    out = {}
    for col in columns:
        worst = 0.0
        for key in a.keys() & b.keys():
            x, y = (_num(a[key][col]), _num(b[key][col]))
            if math.isnan(x) and math.isnan(y):
                continue
            worst = max(worst, abs(x - y) if not (math.isnan(x) or math.isnan(y)) else math.inf)
        out[col] = worst
    return out


def _num(v: str) -> float:
    if v in ("True", "true"):
        return 1.0
    if v in ("False", "false"):
        return 0.0
    return float(v) if v not in ("", "nan") else math.nan


RUNS = {
    "batched": ("batched, 2 threads", 64, 2),
    "separate": ("separate, 2 threads", 1, 2),
    "separate1": ("separate, 1 thread", 1, 1),
}
"""The influence runs by ``--runs`` name: (label, train.batch_networks, torch threads)."""


def part_influence(seeds: str, keep: str | None, names: list[str]) -> None:
    # batched first: its time is in even when the separate runs are cut short
    runs = [RUNS[k] for k in names]
    ref = RUNS["separate"][0] if "separate" in names else runs[0][0]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(keep) if keep else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        res = {}
        for label, bn, th in runs:
            out = base / label.replace(", ", "-").replace(" ", "")
            res[label] = (influence_run(seeds, bn, th, out), read_rows(out))
            print(f"{label}: {res[label][0]:.0f} s ({out})", flush=True)
        report(res, runs, ref, seeds)


def part_ntk(seeds: str) -> None:
    """The quick ntk sweep over ``seeds``: batched (the default) and separate
    (``train.batch_networks = 1``) on 2 threads, separate on 1 thread (the noise floor)."""
    runs = [
        ("batched, 2 threads", 64, 2),
        ("separate, 2 threads", 1, 2),
        ("separate, 1 thread", 1, 1),
    ]
    ref = runs[1][0]
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, bn, th in runs:
            out = Path(tmp) / label.replace(", ", "-").replace(" ", "")
            t = influence_run(seeds, bn, th, out, NTK, force=bn > 1)
            with open(out / "ntk_distance.csv", newline="") as f:
                rows = {(r["model"], r["width"], r["seed"]): r for r in csv.DictReader(f)}
            res[label] = (t, rows, LAST_CPU[0], os.getloadavg()[0])
            print(f"{label}: {t:.0f} s wall, {LAST_CPU[0]:.0f} s CPU", flush=True)
    ref_t, ref_rows, ref_c = res[ref][0], res[ref][1], res[ref][2]
    print(f"\nntk, digits --quick (until converged), seeds {seeds}, {len(ref_rows)} rows")
    print(f"{'trainer':<20} {'wall s':>7} {'ref/this':>8} {'CPU s':>7} {'ref/this':>8} {'load':>5}")
    for label, _, _ in runs:
        t, _, c, load = res[label]
        print(f"{label:<20} {t:>7.0f} {ref_t / t:>8.2f} {c:>7.0f} {ref_c / c:>8.2f} {load:>5.1f}")
    print(f"max |Δ| vs {ref}, per column:")
    print(f"{'column':<22} " + " ".join(f"{lab:>20}" for lab, _, _ in runs if lab != ref))
    diffs = {lab: drift(ref_rows, res[lab][1], NTK_COLUMNS) for lab, _, _ in runs if lab != ref}
    for col in NTK_COLUMNS:
        print(f"{col:<22} " + " ".join(f"{diffs[lab][col]:>20.3g}" for lab in diffs))
    print(flush=True)


def run_seconds(out: Path) -> float:
    """Wall seconds of a finished run from its env.json (start and end time)."""
    import json
    from datetime import datetime

    env = json.loads((out / "env.json").read_text())
    t0, t1 = (datetime.fromisoformat(env[k]) for k in ("start_time", "end_time"))
    return (t1 - t0).total_seconds()


def report(res: dict, runs: list, ref: str, seeds: str) -> None:
    """The table: wall time and, per column, the largest difference from ``ref``'s rows."""
    ref_t, ref_rows = res[ref]
    print(f"\ninfluence_check, MNIST 3 vs 8, defaults, seeds {seeds}")
    print(f"{'trainer':<22} {'wall':>8} {'ref/this':>8}  max |Δ| vs {ref}, per column")
    print(f"{'':<22} {'':>8} {'':>8}  " + "  ".join(f"{c:>14}" for c in NUMERIC))
    for label, _, _ in runs:
        t, rows = res[label]
        d = drift(ref_rows, rows)
        print(
            f"{label:<22} {t / 60:>6.1f}mn {ref_t / t:>8.2f}  "
            + "  ".join(f"{d[c]:>14.3g}" for c in NUMERIC)
        )
    print(f"rows compared: {len(ref_rows)}", flush=True)


def probe_seconds(n: int, d: int, m: int, bs: int, epochs: int) -> float:
    """``bench_train.py``'s probe: one network's forward and weight-gradient matmuls."""
    xb, w, g = (torch.randn(*s, device=DEVICE) for s in ((bs, d), (m, d), (bs, m)))
    sync()
    t0 = time.perf_counter()
    for _ in range(epochs * -(-n // bs)):
        h = xb @ w.T
        gw = g.T @ xb
    sync()
    del h, gw
    return time.perf_counter() - t0


def part_flops(widths: list[int], networks: int, repeat: int) -> None:
    ds = load_dataset("mnist", root=DATA, classes=(3, 8), n_train=500, n_test=100, seed=0)
    x, y = (t.to(DEVICE, torch.float32) for t in (ds.x_train_raw, ds.y_train))
    cfg = TrainSpec(epochs=5)
    n, d, bs = ds.n_train, ds.d, cfg.batch_size
    print(
        f"\ntraining FLOP rate, {networks} networks, MNIST n {n}, d {d}, Adam, batch {bs}, 5 epochs"
    )
    print(
        f"{'width':>6} {'separate s':>10} {'batched s':>10} {'speed-up':>9} {'probe GF/s':>10} "
        f"{'sep/probe':>9} {'bat/probe':>9}"
    )
    # warm-up (not timed): the first call pays for kernel loading and, on CUDA, the context
    warm = [build_model("relu", ds.x_train, widths[0], 1, seed=k).to(DEVICE) for k in range(2)]
    one = TrainSpec(epochs=1)
    list(train(warm[0], x, y, one, generator=torch.Generator().manual_seed(0)))
    list(train_batched(warm, x, y, one, generators=[torch.Generator() for _ in warm]))
    probe_seconds(n, d, widths[0], bs, 1)
    for m in widths:
        sep, bat, probe = [], [], []
        for _ in range(repeat):
            nets = [build_model("relu", ds.x_train, m, 1, seed=k) for k in range(networks)]
            nets = [net.to(DEVICE) for net in nets]
            sync()
            t0 = time.perf_counter()
            for k, net in enumerate(nets):
                list(train(net, x, y, cfg, generator=torch.Generator().manual_seed(k)))
            sync()
            sep.append(time.perf_counter() - t0)
            nets = [build_model("relu", ds.x_train, m, 1, seed=k) for k in range(networks)]
            nets = [net.to(DEVICE) for net in nets]
            gens = [torch.Generator().manual_seed(k) for k in range(networks)]
            sync()
            t0 = time.perf_counter()
            list(train_batched(nets, x, y, cfg, generators=gens))
            sync()
            bat.append(time.perf_counter() - t0)
            probe.append(networks * probe_seconds(n, d, m, bs, cfg.epochs))
        s, b, p = statistics.median(sep), statistics.median(bat), statistics.median(probe)
        flops = 4.0 * n * d * m * cfg.epochs * networks
        print(
            f"{m:>6} {s:>10.3f} {b:>10.3f} {s / b:>8.2f}× {flops / p / 1e9:>10.1f} "
            f"{p / s:>9.2f} {p / b:>9.2f}"
        )


def part_overhead(sizes: list[int], epochs: int = 40) -> None:
    """Seconds of a batched step of B tiny networks ÷ seconds of one separate step."""
    from engine.models import TwoLayerNet

    x = torch.rand(64, 16, generator=torch.Generator().manual_seed(0))
    y = torch.where(x[:, 0] > 0.5, 1.0, -1.0)
    cfg = TrainSpec(epochs=epochs, batch_size=16)
    steps = epochs * 4

    def separate() -> float:
        net = TwoLayerNet(16, 8, 1, seed=0)
        t0 = time.perf_counter()
        list(train(net, x, y, cfg, generator=torch.Generator()))
        return (time.perf_counter() - t0) / steps

    def together(b: int) -> float:
        nets = [TwoLayerNet(16, 8, 1, seed=k) for k in range(b)]
        gens = [torch.Generator().manual_seed(k) for k in range(b)]
        t0 = time.perf_counter()
        list(train_batched(nets, x, y, cfg, generators=gens))
        return (time.perf_counter() - t0) / steps

    separate(), together(2)  # warm-up
    print(f"\nfixed cost of a step (d 16, m 8, batch 16, Adam), {epochs} epochs, median of 5")
    print(f"{'networks':>8} {'separate ms':>11} {'batched ms':>10} {'batched/separate':>16}")
    for b in sizes:
        sep = statistics.median(separate() for _ in range(5))
        bat = statistics.median(together(b) for _ in range(5))
        print(f"{b:>8} {1e3 * sep:>11.3f} {1e3 * bat:>10.3f} {bat / sep:>16.2f}", flush=True)


def part_chunks(sizes: list[int], epochs: int) -> None:
    ds = load_dataset("mnist", root=DATA, classes=(3, 8), n_train=200, n_test=100, seed=0)
    x, y = ds.x_train_raw.to(torch.float32), ds.y_train.to(torch.float32)
    cfg = TrainSpec(epochs=epochs)
    total = max(sizes)
    print(
        f"\nchunk size, {total} networks of influence_check's shape (n 200, width 256), {epochs} epochs"
    )
    print(f"{'chunk':>6} {'2L-ReLU ms/net-epoch':>21} {'MLP-Attn refit':>15}")
    for size in sizes:
        cols = []
        for kind in ("relu", "attn"):
            ctx = [torch.cat([ds.x_train[:i], ds.x_train[i + 1 :]]) for i in range(total)]
            nets = [build_model(kind, c, 256, 1, seed=0) for c in ctx]
            gens = [torch.Generator().manual_seed(7) for _ in nets]
            t0 = time.perf_counter()
            if size == 1:
                for i, (net, g) in enumerate(zip(nets, gens)):
                    list(train(net, x, y, cfg, generator=g, exclude=i))
            else:
                ex = list(range(total))
                list(
                    train_batched(
                        nets, x, y, cfg, generators=gens, excludes=ex, batch_networks=size
                    )
                )
            cols.append(1e3 * (time.perf_counter() - t0) / (total * epochs))
        print(f"{size:>6} {cols[0]:>21.2f} {cols[1]:>15.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="influence,ntk,flops,chunks")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--widths", default="16,64,256,1024")
    ap.add_argument("--networks", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunk-sizes", default="1,4,8,16,32,64,128")
    ap.add_argument("--chunk-epochs", type=int, default=10)
    ap.add_argument("--device", default="cpu", help="cpu or cuda (flops and influence parts)")
    ap.add_argument(
        "--runs", default="batched,separate,separate1", help="influence runs: " + ",".join(RUNS)
    )
    ap.add_argument("--overhead-sizes", default="1,2,3,8,41")
    ap.add_argument("--keep", default=None, help="keep the influence runs in this folder")
    ap.add_argument(
        "--report", default=None, help="only print the influence table of the runs kept there"
    )
    a = ap.parse_args()
    global DEVICE
    DEVICE = torch.device(a.device)
    if DEVICE.type == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_batched: --device cuda but torch.cuda.is_available() is False")
    names = a.runs.split(",")
    if unknown := [k for k in names if k not in RUNS]:
        sys.exit(f"bench_batched: unknown --runs {','.join(unknown)} (allowed: {','.join(RUNS)})")
    torch.set_num_threads(a.threads)
    parts = a.parts.split(",")
    if a.report:  # runs kept by --keep (or started by hand with the same names)
        runs = [("batched, 2 threads", 64, 2), ("separate, 2 threads", 1, 2)]
        runs.append(("separate, 1 thread", 1, 1))
        res = {}
        for label, _, _ in runs:
            out = Path(a.report) / label.replace(", ", "-").replace(" ", "")
            res[label] = (run_seconds(out), read_rows(out))
        report(res, runs, runs[1][0], a.seeds)
        return
    if "overhead" in parts:
        part_overhead([int(s) for s in a.overhead_sizes.split(",")])
    if "chunks" in parts:
        part_chunks([int(s) for s in a.chunk_sizes.split(",")], a.chunk_epochs)
    if "flops" in parts:
        part_flops([int(w) for w in a.widths.split(",")], a.networks, a.repeat)
    if "ntk" in parts:
        part_ntk(a.seeds)
    if "influence" in parts:
        part_influence(a.seeds, a.keep, names)


if __name__ == "__main__":
    main()
