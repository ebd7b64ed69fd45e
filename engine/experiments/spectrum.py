"""Experiment ``spectrum``: spectral amplification κ(G³) = κ(G)³ and its consequences.

One cell per data set (``spec.data`` and every ``spec.spectrum.datasets`` name, with
the same class subset and sizes), on the first seed only: the spectrum is a property
of the subset, not of training, and one SVD per data set is enough to see the claim.

Tables
* ``spectrum`` (docs/architecture.md#run-directory columns): n, d, numerical rank, the λ-tolerance, κ(G), κ(G)³,
  κ(G³) measured from the SVD of GX, κ_d and the width thresholds κ⁶, κ_d⁶ n ln n.
* ``eigenvalues`` (index, eig_G, eig_G3): the top min(n, d) eigenvalues, index 1-based,
  for the primary data set only (the table has no data set column); every data set's
  arrays also go out as an ``eigenvalues`` Artifact.
* ``ntk_spectrum``: Θ∞ on raw (x/‖x‖) vs attention (Cx/‖Cx‖) inputs: κ and decay; with
  ``qkv`` among the models also QKV-Attn's eNTK at init (``entk_qkv_init``) and MLP-Attn's
  G³ kernel (``gram_G3``) on the same rows.
* ``alignment``: kernel-target alignment and kernel-ridge test error of G, G³ and both
  NTKs on top / bottom eigen-targets (clean and with training noise) and on the labels
  (``engine.spectral.alignment``); columns dataset, kernel, target, ridge, alignment,
  test_mse, test_rel_mse, train_mse, test_accuracy, n_train.

Kernel parts use at most ``MAX_KERNEL_N`` training rows (the first ones; subsets are
already shuffled) to keep the n×n matrices small; the spectrum uses every row.
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import torch

from engine.experiments.registry import register
from engine.experiments.work import Plan, Work
from engine.results.tables import AlignmentRow, EigenvalueRow, NtkSpectrumRow, SpectrumRow
from engine.run.events import (
    Artifact,
    CellFinished,
    Event,
    Log,
    Progress,
    Summary,
    TableRow,
    decode_floats,
    encode_floats,
)
from engine.spectral import (
    KERNELS,
    LARGEST_MODEL,
    eigen_target_set,
    fit_targets,
    kernel_spectrum,
    label_targets,
    paper_spectrum,
    spectrum,
    study_kernels,
    width_thresholds,
)

if TYPE_CHECKING:
    from engine.data.dataset import Dataset
    from engine.run.context import RunContext

NTK_KERNELS = ("ntk_raw", "ntk_attn")
"""Kernels whose spectrum goes to the ``ntk_spectrum`` table (Θ∞ on raw vs attention inputs)."""
MAX_KERNEL_N = 3000
"""Largest training set used for the n×n kernels (NTK spectra, alignment)."""
N_TARGET_DIRS = 3
"""Singular directions summed into each eigen-target (top 3 / bottom 3 in the rank)."""
TARGET_NOISE = 0.5
"""Std of the Gaussian noise added to the *training* eigen-targets of the ``*_noisy``
variants (targets have unit mean square; test targets stay clean). Noise-free linear
targets are fitted exactly by G, which represents every linear function; with noise,
the spectral bias of G³ (shrinking all but the top directions) is what decides."""
RIDGES = (1e-6, 1e-3, 1e-1)
"""Relative ridges ρ (λ = ρ·tr(K)/n) of the alignment table."""
HEADLINE_RIDGE = 1e-3
"""The ρ the summary quotes."""
FIT_FLOOR = 1e-3
"""Relative test MSE below which a kernel counts as fitting a target (verdict lines)."""
KAPPA_RTOLS = (1e-6, 1e-8, 1e-10, 1e-12)
"""Extra λ-tolerances whose (rank, κ) the summary lists, to show how much κ depends on it."""
PREPROCESSING = (
    "flattened, pixels in [0, 1], each row scaled to unit ℓ2 norm (docs/protocol.md#models)"
)


def _label(name: str, classes: tuple[int, ...] | None) -> str:
    return name if classes is None else f"{name}:{'v'.join(str(c) for c in classes)}"


def spectrum_work(p: Plan) -> Work:
    """Per data set (the run's and ``spectrum.datasets``): the SVD of the n×d Gram factor
    and three n×n eigendecompositions on at most ``MAX_KERNEL_N`` rows, counted twice
    for float64."""
    n, d = p.n, p.d
    k = min(n, MAX_KERNEL_N)
    per_set = 2.0 * (4.0 * n * d * min(n, d) + 3 * 9.0 * k**3)
    return Work(per_set * (1 + len(p.spec.spectrum.datasets)))


@register("spectrum", estimate=spectrum_work, order=20)
def run_spectrum(ctx: RunContext) -> Iterator[Event]:
    sp = ctx.spec
    names = list(dict.fromkeys([sp.data.name, *sp.spectrum.datasets]))
    seed = sp.seeds[0]
    # resumed cells: their summary entries as the earlier run wrote them
    per_dataset: dict[str, Any] = {
        a["label"]: decode_floats(a["entry"]) for a in ctx.previous_artifacts("spectrum_entry")
    }
    order: list[str] = []
    for i, name in enumerate(names):
        ds = ctx.dataset(name=name, seed=seed)
        label = _label(ds.name, sp.data.classes)
        order.append(label)
        cell = f"spectrum/{label}/{seed}"
        yield Progress("sweep", i, len(names), f"spectrum {label}")
        if ctx.is_done(cell):
            continue
        ctx.check_cancel()
        summary = yield from _cell(ctx, ds, label, cell, primary=i == 0)
        per_dataset[label] = summary
        yield Artifact(
            "spectrum_entry", {"label": label, "entry": encode_floats(summary)}, cell=cell
        )
        yield CellFinished(cell)
    yield Progress("sweep", len(names), len(names), "spectrum done")
    per_dataset = {k: per_dataset[k] for k in order if k in per_dataset}
    yield Summary("spectrum", _summary(per_dataset, sp.data.classes))


def _cell(
    ctx: RunContext, ds: Dataset, label: str, cell: str, *, primary: bool
) -> Generator[Event, None, dict[str, Any]]:
    """All rows of one data set; returns its summary entry."""
    x = ds.x_train.to(ctx.device, torch.float64)
    t0 = time.perf_counter()
    spc = spectrum(x, rtol=ctx.spec.spectrum.rtol)
    seconds = time.perf_counter() - t0
    yield TableRow.of(SpectrumRow.from_row(spc.row(label)), cell=cell)
    if primary:
        for j in range(spc.eig_G.size):
            eig = EigenvalueRow(index=j + 1, eig_G=float(spc.eig_G[j]), eig_G3=float(spc.eig_G3[j]))
            yield TableRow.of(eig, cell=cell)
    yield Artifact(
        "eigenvalues",
        {"dataset": label, "rank": spc.rank, "eig_G": spc.eig_G, "eig_G3": spc.eig_G3},
        cell=cell,
    )
    if not math.isfinite(spc.kappa_d):
        yield Log(
            f"{label}: numerical rank {spc.rank} < min(n, d) = {min(spc.n, spc.d)} "
            f"(dead pixels or dependent rows): κ_d is infinite, v2 thresholds use κ over the rank",
            "warning",
        )
    ctx.check_cancel()

    xk = x[:MAX_KERNEL_N]
    xt = ds.x_test.to(ctx.device, torch.float64)
    headline, ntk_rows = yield from _kernel_study(ctx, ds, xk, xt, label, cell)
    if "qkv" in ctx.spec.model.kinds:
        for kernel, ks in _qkv_spectra(ctx, ds, xk).items():
            row = {"dataset": label, "kernel": kernel, **ks.row()}
            ntk_rows[kernel] = row
            yield TableRow.of(NtkSpectrumRow.from_row(row), cell=cell)
            yield Artifact(
                "ntk_eigenvalues",
                {"dataset": label, "kernel": kernel, "eigenvalues": ks.eigenvalues},
                cell=cell,
            )
        ctx.check_cancel()
    th = spc.thresholds
    entry: dict[str, Any] = {
        "n": spc.n,
        "d": spc.d,
        "rank": spc.rank,
        "rtol": spc.rtol,
        "kappa_G": spc.kappa_G,
        "kappa_G_cubed": spc.kappa_G_cubed,
        "kappa_G3_direct": spc.kappa_G3_direct,
        "cube_rel_error": spc.cube_rel_error,
        "kappa_d": spc.kappa_d,
        **th.as_dict(),
        "kappa_at_rtol": {
            f"{r:g}": dict(zip(("rank", "kappa_G"), spc.kappa_at(r))) for r in KAPPA_RTOLS
        },
        "seconds_svd": round(seconds, 3),
        "preprocessing": PREPROCESSING,
        "ntk_kappa": {k: v["kappa"] for k, v in ntk_rows.items()},
        "alignment": headline,
        "verdict": _verdict(headline),
    }
    paper = paper_spectrum(ds.name, ctx.spec.data.classes)
    if paper is not None:
        at_paper_n = width_thresholds(spc.kappa_G, spc.kappa_d, paper.n)
        entry["paper"] = {
            **paper.as_dict(),
            "m_v1_from_kappa": paper.kappa**6,
            "m_v2_from_kappa": width_thresholds(paper.kappa, paper.kappa, paper.n).v2,
            "ours_v2_at_paper_n": at_paper_n.v2,
            "kappa_ratio_ours_over_paper": spc.kappa_G / paper.kappa,
        }
    return entry


def _qkv_spectra(ctx: RunContext, ds: Dataset, xk: torch.Tensor) -> dict[str, Any]:
    """QKV-Attn (v2): its exact eNTK at initialisation (largest width, float64, first
    seed) beside MLP-Attn's G³ = (X̂X̂ᵀ)³ on the same rows xk [n, d]."""
    from engine.models import build_model
    from engine.models.two_layer import normalize_rows
    from engine.ntk import empirical_ntk
    from engine.spectral.kernels import kernel_spectrum

    sp = ctx.spec
    model = build_model(
        "qkv",
        ctx.context_rows(ds).to(torch.float64),
        max(sp.model.widths),
        ds.n_out,
        sigma_w=sp.model.sigma_w,
        train_output=sp.model.train_output,
        seed=sp.seeds[0],
        dtype=torch.float64,
        d_k=sp.qkv.d_k or None,
        init_std=sp.qkv.init_std or None,
    ).to(xk.device)
    with torch.no_grad():
        theta = empirical_ntk(model, xk, output=None if ds.n_out == 1 else 0)
    g = normalize_rows(xk) @ normalize_rows(xk).T
    rtol = sp.spectrum.rtol
    return {
        "entk_qkv_init": kernel_spectrum(0.5 * (theta + theta.T), rtol=rtol),
        "gram_G3": kernel_spectrum(g @ g @ g, rtol=rtol),
    }


def _targets(
    ctx: RunContext, ds: Dataset, xk: torch.Tensor, xt: torch.Tensor
) -> dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]]:
    """{target: (y_train, y_test, labels or None)}: eigen-targets (one SVD), noisy ones, labels."""
    targets: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]] = {}
    gen = torch.Generator().manual_seed(ctx.spec.seeds[0])
    eig = eigen_target_set(
        xk, xt, which=("top", "bottom"), k=N_TARGET_DIRS, rtol=ctx.spec.spectrum.rtol
    )
    for which, (ytr, yte) in eig.items():
        noise = TARGET_NOISE * torch.randn(ytr.shape, generator=gen, dtype=torch.float64)
        targets[f"eig_{which}"] = (ytr, yte, None)
        targets[f"eig_{which}_noisy"] = (ytr + noise.to(ytr.device), yte, None)
    n_cls = ds.n_out if ds.task != "binary" else 1
    ytr_l = ds.y_train[: xk.shape[0]].to(xk.device)
    yte_l = ds.y_test.to(xk.device)
    targets["labels"] = (label_targets(ytr_l, n_cls), label_targets(yte_l, n_cls), yte_l)
    return targets


def _kernel_study(
    ctx: RunContext, ds: Dataset, xk: torch.Tensor, xt: torch.Tensor, label: str, cell: str
) -> Generator[
    Event, None, tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, Any]]]
]:
    """Rows of ``ntk_spectrum`` and ``alignment``, kernel by kernel.

    Per kernel: its spectrum (NTKs only, one float64 eigvalsh) and every target at every
    ridge through one Cholesky per ridge (``engine.spectral.fit_targets``), instead of
    one eigendecomposition per (kernel, target). Yields ``Progress('cell')`` after each
    kernel. Returns
    ({target: {kernel: headline numbers}}, {ntk kernel: ntk_spectrum row}).
    """
    targets = _targets(ctx, ds, xk, xt)
    kernels = study_kernels(xk, xt)
    headline: dict[str, dict[str, dict[str, float]]] = {}
    ntk_rows: dict[str, dict[str, Any]] = {}
    steps = len(KERNELS)
    yield Progress("cell", 0, steps, f"{label}: kernels (n={xk.shape[0]})", cell=cell)
    for j, kernel in enumerate(KERNELS):
        pair = kernels.pop(kernel)  # free each n×n pair once it is used
        if kernel in NTK_KERNELS:
            ks = kernel_spectrum(pair.train)
            row = {"dataset": label, "kernel": kernel, **ks.row()}
            ntk_rows[kernel] = row
            yield TableRow.of(NtkSpectrumRow.from_row(row), cell=cell)
            yield Artifact(
                "ntk_eigenvalues",
                {"dataset": label, "kernel": kernel, "eigenvalues": ks.eigenvalues},
                cell=cell,
            )
        fits = fit_targets(pair, targets, ridges=RIDGES)
        del pair
        for target, results in fits.items():
            for res in results:
                row = {
                    "dataset": label,
                    "kernel": kernel,
                    "target": target,
                    "ridge": res.ridge,
                    "alignment": res.alignment,
                    "test_mse": res.test_mse,
                    "test_rel_mse": res.test_rel_mse,
                    "train_mse": res.train_mse,
                    "test_accuracy": res.test_accuracy,
                    "n_train": int(xk.shape[0]),
                }
                yield TableRow.of(AlignmentRow.from_row(row), cell=cell)
                if res.ridge == HEADLINE_RIDGE:
                    headline.setdefault(target, {})[kernel] = {
                        "alignment": res.alignment,
                        "test_rel_mse": res.test_rel_mse,
                        "test_accuracy": res.test_accuracy,
                    }
        yield Progress("cell", j + 1, steps, f"{label}: kernel {kernel} done", cell=cell)
        ctx.check_cancel()
    # headline in target order (the order of the verdict lines)
    return {t: headline[t] for t in targets if t in headline}, ntk_rows


def _verdict(headline: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """One line per target: does G³ beat G (relative test MSE at the headline ridge)?

    Within ±5% is a tie; both below ``FIT_FLOOR`` means both fit the target and the
    ratio of two tiny errors says nothing.
    """
    lines = []
    for target, by_kernel in headline.items():
        g, g3 = by_kernel.get("G"), by_kernel.get("G3")
        if g is None or g3 is None:
            continue
        a, b = g["test_rel_mse"], g3["test_rel_mse"]
        nums = (
            f"relative test MSE G {a:.3g} vs G³ {b:.3g}; "
            f"alignment G {g['alignment']:.3g} vs G³ {g3['alignment']:.3g}"
        )
        if math.isfinite(g["test_accuracy"]) and math.isfinite(g3["test_accuracy"]):
            nums += f"; accuracy G {g['test_accuracy']:.3f} vs G³ {g3['test_accuracy']:.3f}"
        if not (math.isfinite(a) and math.isfinite(b)) or a <= 0 or b <= 0:
            word = "not comparable"
        elif max(a, b) < FIT_FLOOR:
            word = "both fit it"
        elif max(a, b) <= 1.05 * min(a, b):
            word = "tie"
        elif b < a:
            word = f"G³ helps ({a / b:.3g}×)"
        else:
            word = f"G³ hurts ({b / a:.3g}×)"
        lines.append(f"{target}: {word}: {nums}")
    return lines


def _headline(per_dataset: dict[str, Any]) -> list[str]:
    """Per data set: κ, the cube check, the v2 width threshold; then the alignment verdicts."""
    lines = []
    for label, e in per_dataset.items():
        line = (
            f"{label}: n={e['n']}, rank={e['rank']}, κ(G)={e['kappa_G']:.3g}, κ(G)³={e['kappa_G_cubed']:.3g}, "
            f"κ(G³) measured={e['kappa_G3_direct']:.3g}; width needed (v2) m≈{e['width_threshold_v2']:.2g}, "
            f"{e['v2_orders_beyond_1e12']:.0f} orders beyond 1e12"
        )
        if "paper" in e:
            line += f" (paper κ≈{e['paper']['kappa']:.2g})"
        lines.append(line)
        lines.extend(f"  {v}" for v in e.get("verdict", []))
    return lines


def _summary(per_dataset: dict[str, Any], classes: tuple[int, ...] | None) -> dict[str, Any]:
    """The ``spectrum`` section of summary.json: ours next to the paper's where it exists."""
    return {
        "headline": _headline(per_dataset),
        "datasets": per_dataset,
        "classes": list(classes) if classes is not None else "all",
        "largest_model_parameters": LARGEST_MODEL,
        "rtol_convention": "on eigenvalues λ of G relative to λ_max; default (max(n, d)·eps)², "
        "i.e. σ > max(n, d)·eps·σ_max",
        "kappa_note": "the paper does not say how κ was computed (n, tolerance, preprocessing); "
        "ours is λ_1/λ_rank of G on the run's training subset",
        "ridge": HEADLINE_RIDGE,
        "ridge_note": "kernel ridge (K + ρ·tr(K)/n·I)α = y, ρ relative so G and G³ are comparable",
    }
