"""Benchmark: engine.spectral.spectrum on real images, plus the float64 sweep of κ(G³).

    python benchmarks/bench_spectrum.py [--quick] [--threads 2] [--data mnist,cifar10] [--sweep-csv out.csv]

Target (issue #4): MNIST's 10,000 test images (784 pixels) in under 30 s on 2 CPU
cores. Reads the IDX / CIFAR pickle files directly (16-byte IDX header, uint8 pixels)
from ../shared/data so it does not depend on engine.data; preprocessing is docs/protocol.md#models:
pixels / 255, each row scaled to unit ℓ2 norm. --quick uses the first 2,000 images.
"""

from __future__ import annotations

import argparse
import gzip
import pickle
import time
from pathlib import Path

import numpy as np
import torch

from engine.spectral import (
    PAPER_SPECTRA,
    first_unresolved,
    spectrum,
    synthetic_sweep,
    write_sweep_csv,
)

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def _unit_rows(x: np.ndarray) -> torch.Tensor:
    x = x.astype(np.float64) / 255.0
    return torch.from_numpy(x / np.linalg.norm(x, axis=1, keepdims=True))


def mnist(limit: int | None) -> torch.Tensor | None:
    p = DATA / "mnist" / "t10k-images-idx3-ubyte.gz"
    if not p.exists():
        return None
    raw = gzip.open(p).read()
    assert int.from_bytes(raw[:4], "big") == 0x803, "not an IDX image file"
    n, rows, cols = (int.from_bytes(raw[4 * i : 4 * i + 4], "big") for i in (1, 2, 3))
    x = np.frombuffer(raw, np.uint8, offset=16).reshape(n, rows * cols)
    return _unit_rows(x[:limit])


def cifar(limit: int | None) -> torch.Tensor | None:
    p = DATA / "cifar10" / "data_batch_1"
    if not p.exists():
        return None
    with open(p, "rb") as f:
        d = pickle.load(f, encoding="bytes")
    return _unit_rows(np.asarray(d[b"data"])[:limit])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="2,000 images and a short sweep")
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads (target: 2)")
    ap.add_argument("--sweep-csv", type=Path, default=None, help="write the synthetic sweep here")
    ap.add_argument("--data", default="mnist,cifar10", help="comma-separated: mnist, cifar10")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    limit = 2000 if args.quick else None

    print(f"spectrum() on real data, {args.threads} threads, float64")
    hdr = f"{'data':8} {'n':>6} {'d':>5} {'rank':>5} {'κ(G)':>10} {'κ(G)³':>10} {'κ(G³) dir':>10} {'rel err':>8} {'κ_d':>8} {'κ⁶':>9} {'κ⁶nlnn':>9} {'paper κ':>8} {'s':>6}"
    print(hdr)
    print("-" * len(hdr))
    loaders = {"mnist": mnist, "cifar10": cifar}
    for name in [t.strip() for t in args.data.split(",") if t.strip()]:
        load = loaders[name]
        x = load(limit)
        if x is None:
            print(f"{name:8} (no data under {DATA.resolve()})")
            continue
        t0 = time.perf_counter()
        sp = spectrum(x)
        dt = time.perf_counter() - t0
        paper = PAPER_SPECTRA[name].kappa
        print(
            f"{name:8} {sp.n:6d} {sp.d:5d} {sp.rank:5d} {sp.kappa_G:10.3e} {sp.kappa_G_cubed:10.3e} "
            f"{sp.kappa_G3_direct:10.3e} {sp.cube_rel_error:8.1e} {sp.kappa_d:8.2g} "
            f"{sp.thresholds.v1:9.2e} {sp.thresholds.v2:9.2e} {paper:8.2g} {dt:6.2f}"
        )
        looser = ", ".join(
            f"rtol {r:g}: rank {k}, κ {v:.3g}"
            for r in (1e-6, 1e-8, 1e-10)
            for k, v in [sp.kappa_at(r)]
        )
        print(f"{'':8} rtol {sp.rtol:.2e} (λ/λ_max); {looser}")

    kappas = [10.0**k for k in range(1, 17, 3 if args.quick else 1)]
    t0 = time.perf_counter()
    rows = synthetic_sweep(kappas)
    dt = time.perf_counter() - t0
    print(
        f"\nsynthetic sweep (X = U diag(s) Vᵀ, 64×32, seed 0), {dt:.2f} s: relative error of κ(G³) vs κ³"
    )
    print(f"{'κ(G)':>8} {'SVD of GX':>10} {'eigh(G³)':>10} {'σ(RC)':>10} {'κ(G)³':>10}")
    for r in rows:
        print(
            f"{r.kappa:8.0e} {r.rel_err_direct:10.1e} {r.rel_err_eigh:10.1e} {r.rel_err_qr:10.1e} {r.rel_err_cubed:10.1e}"
        )
    print(
        f"first κ with >1% error: SVD of GX {first_unresolved(rows):.0e}, "
        f"eigh(G³) {first_unresolved(rows, 'rel_err_eigh'):.0e}, σ(RC) {first_unresolved(rows, 'rel_err_qr'):.0e}"
    )
    if args.sweep_csv is not None:
        print(f"wrote {write_sweep_csv(rows, args.sweep_csv)}")


if __name__ == "__main__":
    main()
