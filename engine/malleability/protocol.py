"""The influence flip-rate protocol (v1 Definition 3.4, PAPER.md §6).

1. Empirical NTK Θ_m of the trained model on the training set and the test points;
   kernel leave-one-out influences I [n_test, n_train] (``ntk_loo_influence``).
2. Rank training points by ``abs_mean`` (mean_t |I[t, i]|, ours, default) or
   ``signed_mean`` (mean_t I[t, i], most helpful first) and select the top
   ``top_frac`` of them (rounded to nearest, at least one; stable sort, so ties go to the
   lower index and the selection is deterministic).
3. Intervene on the training set in pixel space: ``transformed`` replaces the selected
   points by adversarial versions (the attack maximises the trained model's training
   loss at each point, labels unchanged); ``curated`` removes them; ``adversarial``
   perturbs every training point.
4. With the weights frozen (no retraining), recompute the features (MLP-Attn: C from the
   intervened training set, on a copy of the model), Θ_m and the influences.
5. Flip of a selected point i: sign(s_i after) ≠ sign(s_i before), where the score s_i
   is the *signed* mean influence over the test points (ours; the paper does not say
   which aggregate carries the sign), whatever the ranking. The flip rate is the
   fraction of the selected points that flip, with a 95% Wilson (or Clopper–Pearson)
   interval. ``curated`` removes the selected points, so their flips are undefined:
   flip_rate and its interval are NaN and the ranking metrics cover the remaining points.
6. Companions: Spearman ρ between the ranking scores before and after (over every
   point still in the training set) and the top-K overlap |top_K before ∩ top_K after|/K
   with K = n_selected, among the same points (for curated: the K best remaining ones).

Multiclass tasks use one scalar kernel for all outputs (see ``scalar_kernel``) and
one-hot targets; the test loss is the squared error of the kernel predictor by default.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.errors import ConfigError
from engine.malleability.stats import CI_METHODS, proportion_ci
from engine.models.two_layer import normalize_rows

RANKINGS = ("abs_mean", "signed_mean")
INTERVENTIONS = ("transformed", "curated", "adversarial")
AttackFn = Callable[..., Any]
"""attack(model, x [n, d], y [n], *, eps, **opts) → AttackResult (with x_adv) or x_adv."""


@dataclass(frozen=True)
class FlipResult:
    """Outcome of one flip-rate measurement (CPU numpy arrays, plain floats)."""

    flip_rate: float
    """Fraction of the selected points whose signed influence flipped (NaN for curated)."""
    ci_low: float
    """Lower end of the 95% interval of flip_rate."""
    ci_high: float
    """Upper end of the 95% interval of flip_rate."""
    n_flipped: int
    """Number of selected points that flipped (0 for curated)."""
    n_selected: int
    """Number of selected (top-τ) training points."""
    spearman: float
    """Spearman ρ of the ranking scores before vs after (points still present)."""
    topk_overlap: float
    """|top_K before ∩ top_K after| / K, K = n_selected (points still present)."""
    selected: np.ndarray
    """[n_selected] int64 indices of the selected training points, best first."""
    influence_before: np.ndarray
    """[n_train] ranking score of every training point before the intervention."""
    influence_after: np.ndarray
    """[n_train] ranking score after (NaN for removed points)."""
    score_before: np.ndarray
    """[n_train] signed mean influence over the test points before."""
    score_after: np.ndarray
    """[n_train] signed mean influence after (NaN for removed points)."""
    ranking: str
    intervention: str
    attack: str
    eps: float
    attack_loss_gain: float
    """Mean training-loss increase of the perturbed points (NaN for curated)."""


def scalar_kernel(
    model: nn.Module, x1: torch.Tensor, x2: torch.Tensor | None = None, *, method: str = "auto"
) -> torch.Tensor:
    """The per-output empirical NTK [n1, n2] used for every output column.

    One output: Θ itself. K outputs with the fixed ±1 head of PAPER.md §2: every diagonal
    block Θ_kk equals the same (X̃X̃ᵀ) ⊙ (DDᵀ)/m, so Θ_00 is computed. Otherwise (a trained
    head): the mean of the K diagonal blocks. Off-diagonal blocks are dropped.
    """
    from engine.ntk import empirical_ntk

    with torch.no_grad():
        k_out = int(model(x1[:1]).reshape(1, -1).shape[1])
    if k_out == 1:
        return empirical_ntk(model, x1, x2, method=method)  # type: ignore[arg-type]
    head = getattr(model, "head", None)
    a = getattr(head, "output", None)
    fixed = isinstance(a, torch.Tensor) and not a.requires_grad and bool(torch.all(a.abs() == 1))
    if fixed:
        return empirical_ntk(model, x1, x2, method=method, output=0)  # type: ignore[arg-type]
    blocks = [empirical_ntk(model, x1, x2, method=method, output=k) for k in range(k_out)]  # type: ignore[arg-type]
    return torch.stack(blocks).mean(0)


def _influence(
    model: nn.Module, xtr, ytr, xte, yte, lam: float, loss: str, n_classes: int | None, method: str
) -> torch.Tensor:
    from engine.influence import ntk_loo_influence

    k = scalar_kernel(model, xtr, method=method).to(torch.float64)
    kt = scalar_kernel(model, xte, xtr, method=method).to(torch.float64)
    k = 0.5 * (k + k.T)
    return ntk_loo_influence(k, kt, ytr, yte, lam, loss=loss, n_classes=n_classes)


def _ranking_score(infl: torch.Tensor, ranking: str) -> torch.Tensor:
    return infl.abs().mean(0) if ranking == "abs_mean" else infl.mean(0)


def _top(score: torch.Tensor, k: int) -> torch.Tensor:
    return torch.sort(score, descending=True, stable=True).indices[:k]


def _attack(
    attack: str | AttackFn, model, x, y, eps, opts: dict[str, Any], gen
) -> tuple[torch.Tensor, float]:
    if callable(attack):
        out = attack(model, x, y, eps=eps, **opts)
    else:
        from engine.attacks import ATTACKS, run_attack

        fn = ATTACKS.get(attack)
        kw = dict(opts)
        if fn is not None and "generator" in inspect.signature(fn).parameters and gen is not None:
            kw.setdefault("generator", gen)
        out = run_attack(attack, model, x, y, eps=eps, **kw)
    if isinstance(out, torch.Tensor):
        return out.detach(), float("nan")
    gain = (
        (out.loss_after - out.loss_before).mean()
        if out.loss_before.numel()
        else torch.tensor(float("nan"))
    )
    return out.x_adv.detach(), float(gain)


def _unpack(data: Any, y_train, x_test, y_test) -> tuple[torch.Tensor, ...]:
    if hasattr(data, "x_train_raw"):
        return data.x_train_raw, data.y_train, data.x_test_raw, data.y_test
    if y_train is None or x_test is None or y_test is None:
        raise ConfigError(
            "data", type(data).__name__, "a Dataset, or x_train, y_train, x_test, y_test tensors"
        )
    return data, y_train, x_test, y_test


def flip_rate(
    model: nn.Module,
    data: Any,
    y_train: torch.Tensor | None = None,
    x_test: torch.Tensor | None = None,
    y_test: torch.Tensor | None = None,
    *,
    attack: str | AttackFn = "pgd",
    eps: float = 0.3,
    top_frac: float = 0.1,
    ranking: str = "abs_mean",
    intervention: str = "transformed",
    lam: float = 1e-3,
    loss: str = "mse",
    retrain: bool = False,
    transductive: bool = False,
    generator: torch.Generator | None = None,
    seed: int = 0,
    ci: str = "wilson",
    ntk_method: str = "auto",
    attack_opts: dict[str, Any] | None = None,
) -> FlipResult:
    """Measure the influence flip rate of ``model`` (module docstring for the protocol).

    ``data``: a ``Dataset`` (its pixel-space ``x_train_raw`` / ``x_test_raw`` and targets
    are used) or x_train [n, d] in [0, 1] with ``y_train`` [n], ``x_test`` [t, d],
    ``y_test`` [t] (±1 floats for one output, int labels for K outputs). ``attack``: fgsm |
    pgd | mim (``engine.attacks``, options in ``attack_opts``; PGD's random start draws
    from ``generator``, default a generator seeded with ``seed`` on the data's device) or
    a callable attack(model, x, y, *, eps, **opts). ``lam``: ridge λ of the kernel LOO;
    ``loss``: mse | ce test loss of the kernel predictor. ``transductive``: the model's
    attention context also holds the test points (kept after the intervention).
    ``retrain=True`` is not supported (the paper freezes the weights) and raises
    ``ConfigError``. The caller's model is never modified: the attacks and the kernels use
    deep copies. Runs on the model's device; kernels and influences in float64.
    """
    if retrain:
        raise ConfigError(
            "flip.retrain",
            True,
            "not supported yet: influences are recomputed with the trained weights frozen (paper)",
        )
    if ranking not in RANKINGS:
        raise ConfigError("flip.ranking", ranking, f"one of {', '.join(RANKINGS)}")
    if intervention not in INTERVENTIONS:
        raise ConfigError("flip.intervention", intervention, f"one of {', '.join(INTERVENTIONS)}")
    if not (0 < top_frac <= 1):
        raise ConfigError("flip.top_frac", top_frac, "a fraction in (0, 1]")
    if ci not in CI_METHODS:
        raise ConfigError("ci", ci, f"one of {', '.join(CI_METHODS)}")
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

    # kernels from a float64 copy: Θ_m of MLP-Attn is very ill-conditioned (PAPER.md §5);
    # the attacks use the model as trained (``work``, its own dtype)
    k64 = copy.deepcopy(work).to(torch.float64)
    f64 = torch.float64
    infl0 = _influence(
        k64, x_tr.to(f64), y_tr, x_te.to(f64), y_te, lam, loss, n_classes, ntk_method
    )
    rank0, score0 = _ranking_score(infl0, ranking), infl0.mean(0)
    k = min(n, max(1, int(round(top_frac * n))))
    sel = _top(rank0, k)

    gen = generator if generator is not None else torch.Generator(device=dev).manual_seed(int(seed))
    opts = dict(attack_opts or {})
    keep = torch.ones(n, dtype=torch.bool, device=dev)
    gain = float("nan")
    x_new = x_tr.clone()
    if intervention == "transformed":
        x_adv, gain = _attack(attack, work, x_tr[sel], y_tr[sel], eps, opts, gen)
        x_new[sel] = x_adv.to(dev, dt)
    elif intervention == "adversarial":
        x_adv, gain = _attack(attack, work, x_tr, y_tr, eps, opts, gen)
        x_new = x_adv.to(dev, dt)
    else:
        keep[sel] = False
    x_new, y_new = x_new[keep], y_tr[keep]

    after = k64  # a private copy already: recompute C in place (MLP-Attn)
    x_new = x_new.to(f64)
    set_context = getattr(after, "set_context", None)
    if callable(set_context):
        ctx = normalize_rows(x_new)
        set_context(torch.cat([ctx, normalize_rows(x_te.to(f64))]) if transductive else ctx)
    infl1 = _influence(after, x_new, y_new, x_te.to(f64), y_te, lam, loss, n_classes, ntk_method)
    rank1 = torch.full((n,), float("nan"), dtype=torch.float64, device=dev)
    score1 = torch.full_like(rank1, float("nan"))
    rank1[keep], score1[keep] = _ranking_score(infl1, ranking), infl1.mean(0)

    if intervention == "curated":
        rate, lo, hi, n_flip = float("nan"), float("nan"), float("nan"), 0
    else:
        n_flip = int((torch.sign(score1[sel]) != torch.sign(score0[sel])).sum())
        rate = n_flip / k
        lo, hi = proportion_ci(n_flip, k, ci)
    rho, overlap = _ranking_agreement(rank0[keep], rank1[keep], k)
    return FlipResult(
        flip_rate=rate,
        ci_low=lo,
        ci_high=hi,
        n_flipped=n_flip,
        n_selected=k,
        spearman=rho,
        topk_overlap=overlap,
        selected=sel.cpu().numpy().astype(np.int64),
        influence_before=rank0.cpu().numpy(),
        influence_after=rank1.cpu().numpy(),
        score_before=score0.cpu().numpy(),
        score_after=score1.cpu().numpy(),
        ranking=ranking,
        intervention=intervention,
        attack=attack if isinstance(attack, str) else getattr(attack, "__name__", "custom"),
        eps=float(eps),
        attack_loss_gain=gain,
    )


def _ranking_agreement(before: torch.Tensor, after: torch.Tensor, k: int) -> tuple[float, float]:
    """Spearman ρ and top-K overlap of two score vectors over the same points."""
    from scipy.stats import spearmanr

    m = before.shape[0]
    if m < 2:
        return float("nan"), float("nan")
    b, a = before.cpu().numpy(), after.cpu().numpy()
    rho = float(spearmanr(b, a).statistic) if np.ptp(b) > 0 and np.ptp(a) > 0 else float("nan")
    kk = min(k, m)
    top_b = set(_top(before, kk).tolist())
    top_a = set(_top(after, kk).tolist())
    return rho, len(top_b & top_a) / kk if kk else math.nan
