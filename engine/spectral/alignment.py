"""The dual implication (docs/claims.md#claim-5), measured with kernels.

Kernel-target alignment A(K, y) = yᵀKy / (‖K‖_F ‖y‖²) (for a target matrix Y [n, c]:
tr(YᵀKY) / (‖K‖_F ‖Y‖_F²)), and kernel ridge regression with G = XXᵀ against the
attention kernel G³ = (XC)(XC)ᵀ, C = XᵀX, on

* eigen-targets: y(x) = Σ_j x·v_j / σ_j over the top or the bottom (non-null) right
  singular vectors v_j of X_train. On training points x_i·v_j/σ_j = (u_j)_i, so the
  training target is the sum of G's top / bottom eigenvectors, each with equal weight;
  the same formula defines it on test points. Scaled to unit mean square on train.
* the real labels: ±1 for binary tasks, one-hot minus 1/K (centred, so the constant
  direction does not dominate) for K classes.

Ridge: (K + ρ·tr(K)/n·I) α = y with a *relative* ρ, so G and G³ — whose scales differ
by orders of magnitude — get the same amount of regularisation relative to their
average eigenvalue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from engine.errors import ConfigError, DatasetError
from engine.models import normalize_rows
from engine.spectral.kernels import _theta_inf, attention_features
from engine.spectral.ridge import as_columns, ridge_solve
from engine.spectral.spectrum import default_rtol, numerical_rank

KERNELS = ("G", "G3", "ntk_raw", "ntk_attn")


def kernel_alignment(k: torch.Tensor, y: torch.Tensor) -> float:
    """A(K, y) for K [n, n] and y [n] or [n, c]; in [−1, 1], 1 iff K ∝ yyᵀ (c = 1)."""
    y2 = y.reshape(y.shape[0], -1).to(k.dtype)
    num = torch.einsum("ic,ij,jc->", y2, k, y2)
    den = torch.linalg.norm(k) * (y2 * y2).sum()
    return float(num / den) if float(den) > 0 else math.nan


@dataclass(frozen=True)
class KernelPair:
    """One kernel on the training set [n, n] and between test and training points [t, n]."""

    train: torch.Tensor
    test_train: torch.Tensor


def study_kernels(x_train: torch.Tensor, x_test: torch.Tensor) -> dict[str, KernelPair]:
    """The four kernels of ``KERNELS`` on unit-normalised rows, float64 on x's device.

    x_train [n, d], x_test [t, d]. G3 is the linear kernel of the unnormalised attention
    output x ↦ Cx (so its training block is exactly G³); the NTKs use unit-norm inputs.
    """
    xtr = normalize_rows(x_train.to(torch.float64))
    xte = normalize_rows(x_test.to(xtr.device, torch.float64))
    c = xtr.T @ xtr
    ftr, fte = xtr @ c, xte @ c
    atr, ate = attention_features(xtr, xtr), attention_features(xte, xtr)
    return {
        "G": KernelPair(xtr @ xtr.T, xte @ xtr.T),
        "G3": KernelPair(ftr @ ftr.T, fte @ ftr.T),
        "ntk_raw": KernelPair(_theta_inf(xtr), _theta_inf(xte, xtr)),
        "ntk_attn": KernelPair(_theta_inf(atr), _theta_inf(ate, atr)),
    }


def eigen_targets(
    x_train: torch.Tensor,
    x_test: torch.Tensor,
    *,
    which: str,
    k: int = 5,
    rtol: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(y_train [n], y_test [t]) built from the top or bottom right singular vectors of X_train.

    ``which``: "top" (j = 1 … k) or "bottom" (the last k inside the numerical rank of G,
    with ``rtol`` on λ as in ``engine.spectral.spectrum``). Rows are unit-normalised first.
    """
    return eigen_target_set(x_train, x_test, which=(which,), k=k, rtol=rtol)[which]


def eigen_target_set(
    x_train: torch.Tensor,
    x_test: torch.Tensor,
    *,
    which: tuple[str, ...] = ("top", "bottom"),
    k: int = 5,
    rtol: float | None = None,
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """``eigen_targets`` for several ``which`` from one SVD of X_train: {which: (y_train, y_test)}."""
    for w in which:
        if w not in ("top", "bottom"):
            raise ConfigError("which", w, "top or bottom")
    xtr = normalize_rows(x_train.to(torch.float64))
    xte = normalize_rows(x_test.to(xtr.device, torch.float64))
    _, s, vh = torch.linalg.svd(xtr, full_matrices=False)
    lam = (s * s).cpu().numpy()
    n, d = xtr.shape
    r = numerical_rank(lam, default_rtol(n, d) if rtol is None else rtol)
    if r < 1:
        raise DatasetError(
            "the training images have numerical rank 0 (all-zero images, or constant ones "
            "centred): the alignment targets need data with at least one nonzero direction"
        )
    if not (isinstance(k, int) and k >= 1):
        raise ConfigError("k", k, f"a positive integer ≤ the numerical rank ({r})")
    k = min(k, r)
    out = {}
    for w in which:
        idx = slice(0, k) if w == "top" else slice(r - k, r)
        basis = vh[idx].T / s[idx]  # [d, k]: x·v_j/σ_j
        ytr, yte = (xtr @ basis).sum(1), (xte @ basis).sum(1)
        scale = torch.sqrt(n / (ytr * ytr).sum())
        out[w] = (ytr * scale, yte * scale)
    return out


def label_targets(y: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Regression targets from labels: binary (n_classes ≤ 1) ±1 floats → [n, 1];
    int labels 0 … K−1 → one-hot minus 1/K [n, K]."""
    if n_classes <= 1 or torch.is_floating_point(y):
        return y.to(torch.float64).reshape(-1, 1)
    oh = torch.nn.functional.one_hot(y.long(), n_classes).to(torch.float64)
    return oh - 1.0 / n_classes


@dataclass(frozen=True)
class RidgeResult:
    """Kernel ridge fit of one target with one kernel."""

    alignment: float
    """A(K_train, y_train)."""
    ridge: float
    """Relative ridge ρ (absolute λ = ρ·tr(K)/n)."""
    test_mse: float
    """Mean over test points (and outputs) of (f − y)²."""
    test_rel_mse: float
    """test_mse / mean(y_test²): 1 is as bad as predicting 0."""
    train_mse: float
    test_accuracy: float
    """Sign / argmax accuracy for label targets (NaN for eigen-targets)."""


Target = tuple[torch.Tensor, torch.Tensor, "torch.Tensor | None"]
"""(y_train [n] or [n, c], y_test [t] or [t, c], labels [t] or None) of one target."""


def fit_targets(
    pair: KernelPair,
    targets: dict[str, Target],
    *,
    ridges: tuple[float, ...] = (1e-3,),
) -> dict[str, list[RidgeResult]]:
    """Kernel ridge of every target with one kernel: {name: [RidgeResult per ρ]}.

    Fits (K + ρ·tr(K)/n·I) α = y for each relative ρ. All targets' columns go through
    one Cholesky per ρ (``engine.spectral.ridge``), so the O(n³) work is done once per
    (kernel, ρ), not per target. ``labels`` (ints, or ±1 floats for binary) turn on
    the accuracy column.
    """
    k = pair.train.to(torch.float64)
    kt = pair.test_train.to(k)
    cols = {
        name: (as_columns(ytr, k), as_columns(yte, k), lab)
        for name, (ytr, yte, lab) in targets.items()
    }
    if not cols:
        return {}
    y_all = torch.cat([c[0] for c in cols.values()], dim=1)
    bounds, at = {}, 0
    for name, (ytr, _, _) in cols.items():
        bounds[name] = slice(at, at + ytr.shape[1])
        at += ytr.shape[1]
    fits = []
    for alpha in ridge_solve(k, y_all, ridges):
        fits.append((k @ alpha, kt @ alpha))
    out: dict[str, list[RidgeResult]] = {}
    for name, (ytr, yte, lab) in cols.items():
        sl = bounds[name]
        align = kernel_alignment(k, ytr)
        y2 = float((yte * yte).mean())
        res = []
        for rho, (f_tr_all, f_te_all) in zip(ridges, fits):
            f_tr, f_te = f_tr_all[:, sl], f_te_all[:, sl]
            mse = float(((f_te - yte) ** 2).mean())
            acc = math.nan
            if lab is not None:
                lab_d = lab.to(k.device)
                if f_te.shape[1] == 1:
                    acc = float((torch.sign(f_te[:, 0]) == torch.sign(lab_d.to(k))).to(k).mean())
                else:
                    acc = float((f_te.argmax(1) == lab_d.long()).to(k).mean())
            res.append(
                RidgeResult(
                    alignment=align,
                    ridge=float(rho),
                    test_mse=mse,
                    test_rel_mse=mse / y2 if y2 > 0 else math.nan,
                    train_mse=float(((f_tr - ytr) ** 2).mean()),
                    test_accuracy=acc,
                )
            )
        out[name] = res
    return out


def kernel_ridge(
    pair: KernelPair,
    y_train: torch.Tensor,
    y_test: torch.Tensor,
    *,
    ridges: tuple[float, ...] = (1e-3,),
    labels: torch.Tensor | None = None,
) -> list[RidgeResult]:
    """Fit (K + ρ tr(K)/n I) α = y for each relative ρ in ``ridges`` (one target).

    y_train [n] or [n, c], y_test [t] or [t, c]; ``labels`` [t] (ints, or ±1 floats for
    binary) turns on the accuracy column. Several targets: ``fit_targets``.
    """
    return fit_targets(pair, {"y": (y_train, y_test, labels)}, ridges=ridges)["y"]


def alignment_share(lam: np.ndarray) -> float:
    """λ_1 / ‖λ‖₂ = A(K, u_1) for the top eigenvector u_1 of a PSD K with eigenvalues ``lam``."""
    lam = np.asarray(lam, dtype=np.float64)
    return float(lam.max() / np.linalg.norm(lam))
