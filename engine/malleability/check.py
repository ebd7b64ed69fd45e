"""The estimators of the retraining check (``influence_check``): kernel leave-one-out on
the trained network's empirical NTK at several ridges, and the gradient influence, each
as I [t, n] (or [t, k] for chosen points), keyed ``(estimator, ridge label)``.

Pure functions of the trained model, its data set and explicit settings; the experiment
(``engine.experiments.influence_check``) trains, picks the points, retrains without each
one and compares. On this floor, not in ``engine.influence``, because the kernel
estimator on a trained model (``model_kernel_influence``) and the float64 rebuild of the
attention context belong to ``engine.malleability``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from engine.data.dataset import Dataset

Key = tuple[str, str]
Estimates = dict[Key, torch.Tensor]

CG_TOL = 1e-8
"""Relative residual of the CG solves: far below the effects compared (ranks and signs)."""


def ridge_key(rule: str | float) -> str:
    """The ridge's label in the estimator key: a rule name as is, a number as ``%g``."""
    return rule if isinstance(rule, str) else f"{rule:g}"


def kernel_estimates(
    model: nn.Module,
    ds: Dataset,
    rules: Sequence[str | float],
    *,
    l2: float,
    transductive: bool,
) -> tuple[Estimates, dict[Key, float], dict[Key, str]]:
    """{("kernel_loo", ridge rule): I [t, n]} for each of ``rules``, their seconds (each the
    whole call: one eNTK serves every ridge and dominates) and the resolved ridge labels."""
    from engine.malleability import model_kernel_influence

    est: Estimates = {}
    secs: dict[Key, float] = {}
    labels: dict[Key, str] = {}
    t0 = time.perf_counter()
    out = model_kernel_influence(model, ds, list(rules), l2=l2, transductive=transductive)
    took = time.perf_counter() - t0
    for rule, (rho, infl) in out.items():
        key = ("kernel_loo", ridge_key(rule))
        est[key], secs[key], labels[key] = infl, took, rho.label
    return est, secs, labels


def gradient_estimates(
    model: nn.Module,
    ds: Dataset,
    indices: list[int],
    *,
    methods: Sequence[str],
    l2: float,
    exact_max_params: int,
    transductive: bool,
) -> tuple[Estimates, dict[Key, float], dict[Key, str], list[str]]:
    """{("gradient_cg" | "gradient_exact", "lambda"): I [t, k]} for the k removed points
    ``indices`` (k Hessian solves, ``gradient_influence(train_indices=…)``, damped by the
    L2 λ = ``l2``), their seconds, labels, and notes on what was skipped and why."""
    from engine.influence import gradient_influence

    est: Estimates = {}
    secs: dict[Key, float] = {}
    labels: dict[Key, str] = {}
    notes: list[str] = []
    if not methods:
        return est, secs, labels, notes
    if l2 <= 0:
        notes.append(
            "influence_check: gradient influence skipped: it needs a positive damping; train.l2 is 0"
        )
        return est, secs, labels, notes
    m64 = float64_copy(model, ds, transductive=transductive)
    n_params = sum(p.numel() for p in m64.parameters() if p.requires_grad)
    loss = "mse" if ds.task == "binary" else "ce"
    dev = next(m64.parameters()).device
    for method in methods:
        if method == "exact" and n_params > exact_max_params:
            notes.append(
                f"influence_check: gradient (exact) skipped: {n_params} parameters > "
                f"influence_check.exact_max_params = {exact_max_params}"
            )
            continue
        t0 = time.perf_counter()
        infl = gradient_influence(
            m64,
            ds.x_train_raw.to(dev),
            ds.y_train.to(dev),
            ds.x_test_raw.to(dev),
            ds.y_test.to(dev),
            lam=l2,
            loss=loss,
            method=method,
            cg_tol=CG_TOL,
            train_indices=indices,
        )
        key = (f"gradient_{method}", "lambda")
        est[key], secs[key], labels[key] = infl, time.perf_counter() - t0, f"lambda:{l2:g}"
    return est, secs, labels, notes


def float64_copy(model: nn.Module, ds: Dataset, *, transductive: bool) -> nn.Module:
    """A float64 copy with the attention's C recomputed in float64 (as the kernels' is)."""
    from engine.malleability.protocol import rebuild_context

    m = copy.deepcopy(model).to(torch.float64).eval()
    return rebuild_context(
        m, ds.x_train_raw.to(torch.float64), ds.x_test_raw.to(torch.float64), transductive
    )
