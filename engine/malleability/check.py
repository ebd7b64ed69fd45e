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
    from engine.influence.pbrf import PBRFResult

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
    span: bool = True,
) -> tuple[Estimates, dict[Key, float], dict[Key, str], list[str]]:
    """{("gradient_cg" | "gradient_exact", "lambda"): I [t, k]} for the k removed points
    ``indices`` (k Hessian solves, ``gradient_influence(train_indices=…)``, damped by the
    L2 λ = ``l2``), their seconds, labels, and notes on what was skipped and why.
    ``span``: solve in the span of the training features where that is exact
    (``span_problem``; False: on the full first layer, the same numbers, slower);
    ``exact_max_params`` caps the parameters of a dense Hessian (not the span's
    Gauss–Newton solve, whose size is the kernel's)."""
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
    dev = next(m64.parameters()).device
    xtr = ds.x_train_raw.to(dev, torch.float64)
    xte = ds.x_test_raw.to(dev, torch.float64)
    # in the span of the training features where that is exact (``span_problem``): the
    # same H⁻¹∇ℓ_i on m·min(n, d) parameters instead of m·d
    net, inp, inp_t = span_problem(m64, xtr, xte) if span else (m64, xtr, xte)
    n_params = sum(p.numel() for p in net.parameters() if p.requires_grad)
    # the span's head has H = Gauss–Newton + λI exactly (ReLU, fixed output weights): its
    # exact solve runs on the [n, n] kernel at any P (``gradient_influence(gauss_newton)``)
    gauss_newton = isinstance(net, _SpanHead)
    loss = "mse" if ds.task == "binary" else "ce"
    for method in methods:
        if method == "exact" and n_params > exact_max_params and not gauss_newton:
            notes.append(
                f"influence_check: gradient (exact) skipped: {n_params} parameters > "
                f"influence_check.exact_max_params = {exact_max_params}"
            )
            continue
        t0 = time.perf_counter()
        infl = gradient_influence(
            net,
            inp,
            ds.y_train.to(dev),
            inp_t,
            ds.y_test.to(dev),
            lam=l2,
            loss=loss,
            method=method,
            cg_tol=CG_TOL,
            train_indices=indices,
            gauss_newton=gauss_newton,
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


class _SpanHead(nn.Module):
    """The two-layer head with W = W* + B Qᵀ, B [m, r] trained from 0, Q [d, r] an
    orthonormal basis of the training features: input rows [z* | φQ] with z* = φW*ᵀ.

    Exact for the PBRF of a model whose features are fixed and whose only trainable
    weight is the first layer W (2L-ReLU, MLP-Attn with C held fixed): every gradient and
    Hessian-vector product of the PBRF in W is Σ_j c_j φ_jᵀ + λ(W − W*), so the iterates
    stay in W* + span(training φ)·, and ‖W − W*‖ = ‖B‖. It costs n r m instead of n d m.
    """

    def __init__(self, m: int, r: int, output: torch.Tensor) -> None:
        super().__init__()
        self.m = m
        self.b = nn.Parameter(torch.zeros(m, r, dtype=output.dtype, device=output.device))
        self.output: torch.Tensor
        self.register_buffer("output", output)

    def forward(self, xz: torch.Tensor) -> torch.Tensor:
        z = xz[:, : self.m] + xz[:, self.m :] @ self.b.T
        return torch.relu(z) @ self.output / self.m**0.5


def span_problem(
    m64: nn.Module, xtr: torch.Tensor, xte: torch.Tensor
) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """(network, training inputs, test inputs) on which the first-layer problems of
    ``m64`` (the PBRF, the damped Hessian solves of gradient influence) are solved: the
    ``_SpanHead`` over [z* | φQ] when the features are fixed and the first layer W is the
    only trainable weight (2L-ReLU, MLP-Attn with C fixed; P = m·min(n, d) instead of
    m·d), else ``m64`` itself on xtr [n, d], xte [t, d]. Exact for gradient influence:
    every training gradient c_j φ_jᵀ and every Hessian-vector product of the training
    objective lies in R^m ⊗ span(training φ), Q is orthonormal, so H⁻¹∇ℓ_i and its CG
    iterates are those of the full W; a test gradient enters only through ∇ℓ_tᵀ H⁻¹∇ℓ_i,
    which sees its projection φ_t Q."""
    head = getattr(m64, "head", None)
    trainable = [k for k, p in m64.named_parameters() if p.requires_grad]
    span = (
        head is not None
        and getattr(head, "fixed_features", False)
        and not getattr(head, "train_output", True)
        and trainable in (["weight"], ["mlp.weight"])
    )
    if not span:
        return m64, xtr, xte
    assert head is not None
    with torch.no_grad():
        phi, phi_t = m64.features(xtr), m64.features(xte)  # type: ignore[operator]
        q, _ = torch.linalg.qr(phi.T)  # [d, min(d, n)], orthonormal columns
        w = head.weight
        inp = torch.cat([phi @ w.T, phi @ q], 1)
        inp_t = torch.cat([phi_t @ w.T, phi_t @ q], 1)
    return _SpanHead(int(w.shape[0]), int(q.shape[1]), head.output), inp, inp_t


def pbrf_truth(
    model: nn.Module,
    ds: Dataset,
    indices: list[int],
    *,
    l2: float,
    transductive: bool,
    solver: str,
    max_steps: int,
    tol: float,
    checkpoint: int | None = None,
) -> tuple[PBRFResult, float]:
    """The PBRF true effects Δ [t, k] of removing each of ``indices`` from the trained
    ``model`` (``engine.influence.pbrf``; C held fixed), on a float64 copy: (the result,
    with its convergence and, given ``checkpoint``, the shorter solve's; seconds).

    In the span of the training features where that is exact (``_SpanHead``: 2L-ReLU,
    MLP-Attn), ``max_steps`` L-BFGS steps then the active set over the ReLU kinks
    (``engine.influence.pbrf_relu.polished_pbrf``: a Clarke-stationary point, the
    ``tol`` its relative generalised-gradient norm; ``checkpoint`` the other warm start);
    else L-BFGS alone (``pbrf_effects``), ``tol`` its relative gradient norm."""
    from engine.influence.losses import encode_targets
    from engine.influence.pbrf import _Problem, pbrf_effects
    from engine.influence.pbrf_relu import ReluHead, polished_pbrf

    t0 = time.perf_counter()
    m64 = float64_copy(model, ds, transductive=transductive)
    dev = next(m64.parameters()).device
    loss = "mse" if ds.task == "binary" else "ce"
    xtr = ds.x_train_raw.to(dev, torch.float64)
    xte = ds.x_test_raw.to(dev, torch.float64)
    net, inp, inp_t = span_problem(m64, xtr, xte)
    if isinstance(net, _SpanHead):
        k_out = int(net.output.shape[1])
        t = encode_targets(ds.y_train, k_out, dtype=torch.float64).to(dev)
        tt = encode_targets(ds.y_test, k_out, dtype=torch.float64).to(dev)
        idx = torch.as_tensor(indices, dtype=torch.long, device=dev)
        prob = _Problem(net, inp, t, idx, l2, loss, 1.0 / inp.shape[0])
        head = ReluHead.from_span(net.output, inp, inp_t, t, tt)
        res = polished_pbrf(prob, head, steps=max_steps, tol=tol, checkpoint=checkpoint)
        return res, time.perf_counter() - t0
    res = pbrf_effects(
        net,
        inp,
        ds.y_train.to(dev),
        inp_t,
        ds.y_test.to(dev),
        indices,
        lam=l2,
        loss=loss,
        solver=solver,
        tol=tol,
        max_steps=max_steps,
        checkpoint=checkpoint,
    )
    return res, time.perf_counter() - t0
