"""The influence flip-rate protocol (v1 Definition 3.4, docs/protocol.md#influence and docs/protocol.md#evidence).

1. Empirical NTK Θ_m of the trained model on the training set and the test points;
   kernel leave-one-out influences I [n_test, n_train] (``ntk_loo_influence``) with the
   ridge ρ of ``ridge`` (``engine.ridge``: ``objective`` = nλ/2 by default, the ridge
   that makes kernel ridge the minimiser of the linearized training objective).
2. Select the top ``top_frac`` of the training points by ``ranking``
   (``engine.malleability.ranking``: ``abs_signed_mean`` by default).
3. Intervene on the training set in pixel space: ``transformed`` replaces the selected
   points by adversarial versions (the attack maximises the trained model's training
   loss at each point, labels unchanged); ``curated`` removes them; ``adversarial``
   perturbs every training point.
4. With the weights frozen (no retraining), recompute the features (MLP-Attn: C from the
   intervened training set, on a copy of the model), Θ_m and the influences, at the same
   ridge. The "before" C is recomputed in float64 from the original training set too, so
   before and after use the same dtype for C (a float32 C would differ from its float64
   recomputation by round-off alone).
5. Flips: sign changes of the selected units (the ranking module says which signed
   quantity), with a 95% Wilson (or Clopper–Pearson) interval and the split by the sign
   before (helpful = positive). ``curated`` removes the selected points, so their flips
   are undefined: flip_rate and its interval are NaN.
6. Companions: Spearman ρ between the ranking scores before and after (over every
   point still in the training set) and the top-K overlap |top_K before ∩ top_K after|/K
   with K = n_selected points, among the same points.

``flip_rates`` evaluates several (ridge, ranking) protocols on one model at once: one
kernel before, one influence matrix per ridge, one attack of the union of every selected
set (the attacks act on each point independently, so a point selected by two protocols
gets the same adversarial version in both), one kernel after per distinct selection.

Multiclass tasks use one scalar kernel for all outputs (see ``scalar_kernel``) and
one-hot targets; the test loss is the squared error of the kernel predictor by default.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.errors import ConfigError
from engine.kinds import INTERVENTIONS, NtkMethod, check_flip
from engine.malleability.ranking import (
    RANKINGS,
    Selection,
    check_ranking,
    count_flips,
    ranking_score,
    select,
    top_indices,
)
from engine.malleability.stats import proportion_ci
from engine.models.two_layer import normalize_rows
from engine.ridge import Ridge, resolve_ridge

AttackFn = Callable[..., Any]
"""attack(model, x [n, d], y [n], *, eps, **opts) → AttackResult (with x_adv) or x_adv."""
__all__ = ["INTERVENTIONS", "RANKINGS", "FlipResult", "flip_rate", "flip_rates", "scalar_kernel"]


@dataclass(frozen=True)
class FlipResult:
    """Outcome of one flip-rate measurement (CPU numpy arrays, plain floats)."""

    flip_rate: float
    """n_flipped / n_selected (NaN for curated)."""
    ci_low: float
    """Lower end of the 95% interval of flip_rate."""
    ci_high: float
    """Upper end of the 95% interval of flip_rate."""
    n_flipped: int
    """Selected units (points, or (t, i) pairs for per_test) whose sign flipped."""
    n_selected: int
    """Selected units: the flip rate's denominator."""
    n_helpful: int
    """Selected units helpful (positive) before the intervention."""
    flipped_helpful: int
    """Flipped units that were helpful before."""
    flipped_harmful: int
    """Flipped units that were harmful (≤ 0) before."""
    spearman: float
    """Spearman ρ of the ranking scores before vs after (points still present)."""
    topk_overlap: float
    """|top_K before ∩ top_K after| / K, K = selected points (points still present)."""
    selected: np.ndarray
    """[k] int64 indices of the perturbed (selected) training points, best first."""
    influence_before: np.ndarray
    """[n_train] ranking score of every training point before the intervention."""
    influence_after: np.ndarray
    """[n_train] ranking score after (NaN for removed points)."""
    score_before: np.ndarray
    """[n_train] signed mean influence over the test points before."""
    score_after: np.ndarray
    """[n_train] signed mean influence after (NaN for removed points)."""
    ranking: str
    ridge: float
    """The ridge ρ of the kernel LOO."""
    ridge_label: str
    """The ridge and its rule, e.g. ``objective:0.5`` (``engine.ridge.Ridge.label``)."""
    intervention: str
    attack: str
    eps: float
    attack_loss_gain: float
    """Mean training-loss increase of the perturbed points (NaN for curated)."""


def scalar_kernel(
    model: nn.Module,
    x1: torch.Tensor,
    x2: torch.Tensor | None = None,
    *,
    method: NtkMethod = "auto",
) -> torch.Tensor:
    """The per-output empirical NTK [n1, n2] used for every output column.

    One output: Θ itself. K outputs with the fixed ±1 head of docs/protocol.md#models: every diagonal
    block Θ_kk equals the same (X̃X̃ᵀ) ⊙ (DDᵀ)/m, so Θ_00 is computed. Otherwise (a trained
    head): the mean of the K diagonal blocks. Off-diagonal blocks are dropped.
    """
    from engine.ntk import empirical_ntk

    with torch.no_grad():
        k_out = int(model(x1[:1]).reshape(1, -1).shape[1])
    if k_out == 1:
        return empirical_ntk(model, x1, x2, method=method)
    head = getattr(model, "head", None)
    a = getattr(head, "output", None)
    fixed = isinstance(a, torch.Tensor) and not a.requires_grad and bool(torch.all(a.abs() == 1))
    if fixed:
        return empirical_ntk(model, x1, x2, method=method, output=0)
    blocks = [empirical_ntk(model, x1, x2, method=method, output=k) for k in range(k_out)]
    return torch.stack(blocks).mean(0)


def rebuild_context(
    k64: nn.Module, x_new: torch.Tensor, xte64: torch.Tensor, transductive: bool
) -> nn.Module:
    """``k64`` (float64) with the attention's C from the training inputs ``x_new`` (a copy;
    models without a context are returned as they are)."""
    if not callable(getattr(k64, "set_context", None)):
        return k64
    m = copy.deepcopy(k64)
    embed = getattr(m, "embed", None)
    rows = embed if callable(embed) else normalize_rows  # data.center: centred, then unit rows
    ctx = rows(x_new)
    m.set_context(torch.cat([ctx, rows(xte64)]) if transductive else ctx)  # type: ignore[operator]
    return m


def _loo(
    kk: tuple[torch.Tensor, torch.Tensor],
    y: torch.Tensor,
    y_te: torch.Tensor,
    rho: Ridge,
    loss: str,
    n_classes: int | None,
) -> torch.Tensor:
    from engine.influence import ntk_loo_influence

    return ntk_loo_influence(kk[0], kk[1], y, y_te, rho.value, loss=loss, n_classes=n_classes)


def model_kernel_influence(
    model: nn.Module,
    data: Any,
    ridges: Sequence[str | float],
    *,
    l2: float,
    loss: str = "mse",
    transductive: bool = False,
    ntk_method: NtkMethod = "auto",
) -> dict[str | float, tuple[Ridge, torch.Tensor]]:
    """Step 1 of the protocol alone: the kernel LOO influence I [n_test, n_train] of the
    trained ``model`` at each ridge rule of ``ridges`` (``engine.ridge``), in float64, with
    the attention's C recomputed in float64, exactly as ``flip_rates`` computes it before
    the intervention. ``data`` as in ``flip_rates``. Returns {rule: (Ridge, I)}."""
    x_tr, y_tr, x_te, y_te = _unpack(data, None, None, None)
    work = copy.deepcopy(model).eval()
    ref = next(iter(work.parameters()), None)
    dev = ref.device if ref is not None else x_tr.device
    f64 = torch.float64
    x64, xte64 = x_tr.to(dev, f64), x_te.to(dev, f64)
    y_tr, y_te = y_tr.to(dev), y_te.to(dev)
    k64 = work.to(f64)
    with torch.no_grad():
        k_out = int(k64(x64[:1]).reshape(1, -1).shape[1])
    n_classes = None if y_tr.is_floating_point() else k_out
    train_loss = "mse" if y_tr.is_floating_point() else "ce"
    kk = _kernels(rebuild_context(k64, x64, xte64, transductive), x64, xte64, ntk_method)
    out: dict[str | float, tuple[Ridge, torch.Tensor]] = {}
    for r in dict.fromkeys(ridges):
        rho = resolve_ridge(r, n=x64.shape[0], lam=l2, loss=train_loss, field="ridge")
        out[r] = (rho, _loo(kk, y_tr, y_te, rho, loss, n_classes))
    return out


def _kernels(model: nn.Module, xtr, xte, method: NtkMethod) -> tuple[torch.Tensor, torch.Tensor]:
    k = scalar_kernel(model, xtr, method=method).to(torch.float64)
    kt = scalar_kernel(model, xte, xtr, method=method).to(torch.float64)
    return 0.5 * (k + k.T), kt


def _attack(
    attack: str | AttackFn, model, x, y, eps, opts: dict[str, Any], gen
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x_adv [n, d], per-point training-loss gain [n] (NaN when the attack gives none))."""
    if callable(attack):
        out = attack(model, x, y, eps=eps, **opts)
    else:
        from engine.attacks import ATTACKS, run_attack

        fn = ATTACKS.get(attack)
        kw = dict(opts)
        if fn is not None and "generator" in inspect.signature(fn).parameters and gen is not None:
            kw.setdefault("generator", gen)
        out = run_attack(attack, model, x, y, eps=eps, **kw)
    nan = torch.full((x.shape[0],), float("nan"), dtype=torch.float64)
    if isinstance(out, torch.Tensor):
        return out.detach(), nan
    gain = (out.loss_after - out.loss_before).detach().double().cpu().reshape(-1)
    return out.x_adv.detach(), gain if gain.numel() == x.shape[0] else nan


def _unpack(data: Any, y_train, x_test, y_test) -> tuple[torch.Tensor, ...]:
    if hasattr(data, "x_train_raw"):
        return data.x_train_raw, data.y_train, data.x_test_raw, data.y_test
    if y_train is None or x_test is None or y_test is None:
        raise ConfigError(
            "data", type(data).__name__, "a Dataset, or x_train, y_train, x_test, y_test tensors"
        )
    return data, y_train, x_test, y_test


@dataclass(frozen=True)
class FlipOptions:
    """How ``flip_rates`` measures (module docstring); checked once, here."""

    protocols: Sequence[tuple[str | float, str]] = (("objective", "abs_signed_mean"),)
    """(ridge, ranking) pairs: ridge ``objective`` (nλ/2), ``lambda`` (λ) or a number; a
    ranking of ``RANKINGS``. One result per pair, on the same attacked points."""
    l2: float = 1e-3
    """λ, the training L2 (the ridge rules read it)."""
    attack: str | AttackFn = "pgd"
    """fgsm | pgd | mim (``engine.attacks``) or a callable attack(model, x, y, *, eps, **opts)."""
    eps: float = 0.3
    """The attack's budget in pixel space."""
    top_frac: float = 0.1
    """Fraction of the training set selected (the top-ranked)."""
    intervention: str = "transformed"
    """transformed, curated or adversarial (``engine.kinds.INTERVENTIONS``)."""
    loss: str = "mse"
    """mse | ce: the kernel predictor's test loss."""
    retrain: bool = False
    """True raises ``ConfigError``: the paper freezes the weights."""
    transductive: bool = False
    """The attention context also holds the test points."""
    seed: int = 0
    """Seeds PGD's random start when no generator is passed."""
    ci: str = "wilson"
    """The flip rate's interval: wilson or clopper_pearson."""
    ntk_method: NtkMethod = "auto"
    """How the empirical NTK is computed (``engine.ntk.empirical_ntk``)."""
    attack_opts: dict[str, Any] | None = None
    """The attack's own options (steps, step size, norm, …)."""

    def __post_init__(self) -> None:
        check_flip(
            top_frac=self.top_frac,
            intervention=self.intervention,
            retrain=self.retrain,
            ci=self.ci,
        )
        if not self.protocols:
            raise ConfigError("protocols", self.protocols, "at least one (ridge, ranking) pair")
        for _, rk in self.protocols:
            check_ranking(rk)


def flip_rate(
    model: nn.Module,
    data: Any,
    *args: Any,
    ranking: str = "abs_signed_mean",
    ridge: str | float = "objective",
    **kw: Any,
) -> FlipResult:
    """One protocol (``ridge``, ``ranking``) of ``flip_rates``; same arguments."""
    return flip_rates(model, data, *args, protocols=[(ridge, ranking)], **kw)[0]


def flip_rates(
    model: nn.Module,
    data: Any,
    y_train: torch.Tensor | None = None,
    x_test: torch.Tensor | None = None,
    y_test: torch.Tensor | None = None,
    options: FlipOptions | None = None,
    *,
    generator: torch.Generator | None = None,
    **kw: Any,
) -> list[FlipResult]:
    """Flip rates of ``model`` for each (ridge, ranking) of ``options.protocols`` (module
    docstring; ``FlipOptions`` says what each option does, or pass them as keywords).

    ``data``: a ``Dataset`` (its pixel-space ``x_train_raw`` / ``x_test_raw`` and targets
    are used) or x_train [n, d] in [0, 1] with ``y_train`` [n], ``x_test`` [t, d],
    ``y_test`` [t] (±1 floats for one output, int labels for K outputs). PGD's random start
    draws from ``generator`` (default: seeded with ``options.seed``). The caller's model is
    never modified. Runs on the model's device; kernels and influences in float64.
    Returns one result per protocol.
    """
    if options is not None and kw:
        raise ConfigError("flip_rates", sorted(kw), "options or keywords, not both")
    o = options if options is not None else FlipOptions(**kw)
    protocols, l2, attack, eps = o.protocols, o.l2, o.attack, o.eps
    top_frac, intervention, loss = o.top_frac, o.intervention, o.loss
    transductive, seed, ci, ntk_method = o.transductive, o.seed, o.ci, o.ntk_method
    attack_opts = o.attack_opts
    x_tr, y_tr, x_te, y_te = _unpack(data, y_train, x_test, y_test)
    work = copy.deepcopy(model).eval()
    ref = next(iter(work.parameters()), None)
    dev = ref.device if ref is not None else x_tr.device
    dt = ref.dtype if ref is not None else x_tr.dtype
    x_tr, x_te = x_tr.to(dev, dt), x_te.to(dev, dt)
    y_tr, y_te = y_tr.to(dev), y_te.to(dev)
    n = x_tr.shape[0]
    with torch.no_grad():
        k_out = int(work(x_tr[:1]).reshape(1, -1).shape[1])
    n_classes = None if y_tr.is_floating_point() else k_out  # labels → one-hot over the K outputs
    train_loss = "mse" if y_tr.is_floating_point() else "ce"
    ridges = {
        r: resolve_ridge(r, n=n, lam=l2, loss=train_loss, field="flip.ridge") for r, _ in protocols
    }

    f64 = torch.float64
    xte64 = x_te.to(f64)
    # kernels from a float64 copy: Θ_m of MLP-Attn is very ill-conditioned (docs/protocol.md#spectra);
    # the attacks use the model as trained (``work``, its own dtype)
    k64 = copy.deepcopy(work).to(f64)

    def with_context(x_new: torch.Tensor) -> nn.Module:
        return rebuild_context(k64, x_new, xte64, transductive)

    def infl(kk: tuple[torch.Tensor, torch.Tensor], y: torch.Tensor, rho: Ridge) -> torch.Tensor:
        return _loo(kk, y, y_te, rho, loss, n_classes)

    x64 = x_tr.to(f64)
    k_before = _kernels(with_context(x64), x64, xte64, ntk_method)
    infl0 = {r: infl(k_before, y_tr, rho) for r, rho in ridges.items()}
    sels = [select(infl0[r], rk, top_frac) for r, rk in protocols]

    # one attack of every point any protocol perturbs (each point's attack is independent)
    gen = generator if generator is not None else torch.Generator(device=dev).manual_seed(int(seed))
    opts = dict(attack_opts or {})
    x_adv = x_tr.clone()
    gain = torch.full((n,), float("nan"), dtype=f64)
    if intervention != "curated":
        idx = (
            torch.arange(n, device=dev)
            if intervention == "adversarial"
            else torch.unique(torch.cat([s.points for s in sels]))
        )
        adv, g = _attack(attack, work, x_tr[idx], y_tr[idx], eps, opts, gen)
        x_adv[idx] = adv.to(dev, dt)
        gain[idx.cpu()] = g

    after_cache: dict[
        tuple[int, ...], tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
    ] = {}
    out = []
    for (r, rk), sel in zip(protocols, sels):
        pts = sel.points if intervention != "adversarial" else torch.arange(n, device=dev)
        key = tuple(sorted(pts.tolist()))
        if key not in after_cache:
            keep = torch.ones(n, dtype=torch.bool, device=dev)
            x_new = x_tr.clone()
            if intervention == "curated":
                keep[pts] = False
            else:
                x_new[pts] = x_adv[pts]
            xn = x_new[keep].to(f64)
            kk = _kernels(with_context(xn), xn, xte64, ntk_method)
            after_cache[key] = (keep, kk[0], kk[1], y_tr[keep])
        keep, ka, kta, ya = after_cache[key]
        infl1 = torch.full_like(infl0[r], float("nan"))
        infl1[:, keep] = infl((ka, kta), ya, ridges[r])
        out.append(
            _result(
                infl0[r],
                infl1,
                keep,
                sel,
                ridges[r],
                rk,
                intervention,
                attack,
                eps,
                ci,
                float(gain[sel.points.cpu()].mean())
                if intervention == "transformed"
                else float(gain.mean()),
            )
        )
    return out


def _result(
    infl0: torch.Tensor,
    infl1: torch.Tensor,
    keep: torch.Tensor,
    sel: Selection,
    rho: Ridge,
    ranking: str,
    intervention: str,
    attack: Any,
    eps: float,
    ci: str,
    gain: float,
) -> FlipResult:
    ridge = rho  # the kernel ridge (Spearman's ρ is ``spear``)
    n = infl0.shape[1]
    rank0, score0 = ranking_score(infl0, ranking), infl0.mean(0)
    rank1 = torch.full((n,), float("nan"), dtype=torch.float64, device=infl0.device)
    score1 = torch.full_like(rank1, float("nan"))
    rank1[keep], score1[keep] = ranking_score(infl1[:, keep], ranking), infl1[:, keep].mean(0)
    if intervention == "curated":
        rate, lo, hi = float("nan"), float("nan"), float("nan")
        nf = nh = fh = fa = 0
        units = sel.n_units
    else:
        c = count_flips(infl0, infl1, sel)
        units, nf, nh, fh, fa = (
            c.n_units,
            c.n_flipped,
            c.n_helpful,
            c.flipped_helpful,
            c.flipped_harmful,
        )
        rate = nf / units
        lo, hi = proportion_ci(nf, units, ci)
    spear, overlap = _ranking_agreement(rank0[keep], rank1[keep], int(sel.points.numel()))
    return FlipResult(
        flip_rate=rate,
        ci_low=lo,
        ci_high=hi,
        n_flipped=nf,
        n_selected=units,
        n_helpful=nh,
        flipped_helpful=fh,
        flipped_harmful=fa,
        spearman=spear,
        topk_overlap=overlap,
        selected=sel.points.cpu().numpy().astype(np.int64),
        influence_before=rank0.cpu().numpy(),
        influence_after=rank1.cpu().numpy(),
        score_before=score0.cpu().numpy(),
        score_after=score1.cpu().numpy(),
        ranking=ranking,
        ridge=ridge.value,
        ridge_label=ridge.label,
        intervention=intervention,
        attack=attack if isinstance(attack, str) else getattr(attack, "__name__", "custom"),
        eps=float(eps),
        attack_loss_gain=gain,
    )


def _ranking_agreement(before: torch.Tensor, after: torch.Tensor, k: int) -> tuple[float, float]:
    """Spearman ρ (``engine.results.spearman``: NaN below 3 points or for constant scores)
    and top-K overlap of two score vectors over the same points."""
    from engine.results import spearman

    m = before.shape[0]
    if m < 2:
        return float("nan"), float("nan")
    rho, _ = spearman(before.cpu().tolist(), after.cpu().tolist())
    kk = min(k, m)
    top_b = set(top_indices(before, kk).tolist())
    top_a = set(top_indices(after, kk).tolist())
    return rho, len(top_b & top_a) / kk if kk else math.nan
