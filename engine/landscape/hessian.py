"""Sharpness from Hessian-vector products: top eigenvalues (power, Lanczos) and trace.

The Hessian is that of the full-batch ``Objective`` (training data loss by default)
with respect to the *trainable* parameters only, flattened to a vector θ [P]. It
is never formed: H v = ∇_θ⟨∇_θ L(θ), v⟩ (reverse-over-reverse ``torch.func.grad``;
on the CPU it was as fast as forward-over-reverse ``jvp`` and skips the one-off
load of the forward-mode decompositions), and several products at once are
``vmap``-ed.

"Top eigenvalue" means the largest *algebraic* eigenvalue λ_max (the sharpness).
Power iteration finds the eigenvalue of largest magnitude; when that comes out
negative we rerun it on H − λI (then positive semi-definite), so both methods
return λ_max even for an indefinite Hessian. For the TwoLayerNet with a fixed
output layer H is PSD anyway (the network is piecewise linear in W).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import grad, vmap

from engine.errors import ConfigError
from engine.landscape.objective import LossFn, Objective, make_objective

HVP = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class EigResult:
    """Top Hessian eigenvalue; ``iterations`` = Hessian-vector products used (per probe)."""

    value: float
    iterations: int
    converged: bool


@dataclass(frozen=True)
class EigsResult:
    """Top-k Hessian eigenvalues, descending, with the same bookkeeping as ``EigResult``."""

    values: tuple[float, ...]
    iterations: int
    converged: bool


@dataclass(frozen=True)
class TraceResult:
    """Hutchinson estimate of tr H and its standard error (NaN for one probe)."""

    value: float
    stderr: float
    samples: int


def _hvp(obj: Objective) -> tuple[HVP, torch.Tensor]:
    f = obj.flat_fn()
    theta = obj.flatten(obj.params).detach()
    g = grad(f)

    def hvp(v: torch.Tensor) -> torch.Tensor:
        return grad(lambda t: (g(t) * v).sum())(theta)

    return hvp, theta


def hvp_fn(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    loss: LossFn | None = None,
    l2: float = 0.0,
) -> tuple[HVP, torch.Tensor]:
    """(v [P] ↦ H v [P], θ [P]) for the loss of ``model`` on x [n, d], y [n]."""
    return _hvp(make_objective(model, x, y, loss=loss, l2=l2))


def _check(method: str, iters: int, tol: float, k: int) -> None:
    if method not in ("power", "lanczos"):
        raise ConfigError("method", method, "power or lanczos")
    if not isinstance(iters, int) or iters < 1:
        raise ConfigError("iters", iters, "a positive integer (iteration cap)")
    if not (tol > 0 and math.isfinite(tol)):
        raise ConfigError("tol", tol, "a positive number (relative tolerance)")
    if not isinstance(k, int) or k < 1:
        raise ConfigError("k", k, "a positive integer")


def _start(p: int, k: int, like: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    z = torch.randn(p, k, generator=generator, device=generator.device, dtype=torch.float64)
    return torch.linalg.qr(z.to(like.device, like.dtype))[0]


def _subspace(
    hvp: HVP,
    p: int,
    k: int,
    iters: int,
    tol: float,
    like: torch.Tensor,
    g: torch.Generator,
    shift: float = 0.0,
) -> tuple[torch.Tensor, int, bool]:
    """Block power iteration with Rayleigh-Ritz on (H − shift·I); k = 1 is plain power.

    Converged when every Ritz value changes by ≤ tol·|value| between iterations.
    Returns the k Ritz values of H (shift added back) by decreasing magnitude of
    the shifted operator, the products used and the flag.
    """
    bhvp = vmap(hvp, in_dims=1, out_dims=1)
    v = _start(p, k, like, g)
    prev: torch.Tensor | None = None
    for it in range(1, iters + 1):
        w = bhvp(v) - shift * v
        t = v.T @ w
        evals, evecs = torch.linalg.eigh(0.5 * (t + t.T))
        order = evals.abs().argsort(descending=True)
        evals, evecs = evals[order], evecs[:, order]
        done = prev is not None and bool(((evals - prev).abs() <= tol * evals.abs()).all())
        if done or it == iters or float(w.norm()) == 0.0:
            return evals + shift, it, done or float(w.norm()) == 0.0
        prev = evals
        # Rotate onto the Ritz vectors before orthonormalising so column i tracks λ_i.
        v = torch.linalg.qr(w @ evecs)[0]
    raise AssertionError("unreachable")  # pragma: no cover


def _power(
    hvp: HVP, p: int, k: int, iters: int, tol: float, like: torch.Tensor, g: torch.Generator
) -> EigsResult:
    vals, used, ok = _subspace(hvp, p, k, iters, tol, like, g)
    total = used
    if float(vals.min()) < 0:
        # The largest-magnitude set holds a negative eigenvalue, hence λ_min: H − λ_min I
        # is PSD and its largest-magnitude eigenvalues are the largest algebraic ones.
        s = float(vals.min())
        vals, used, ok = _subspace(hvp, p, k, iters, tol, like, g, shift=s)
        total += used
    vals = vals.sort(descending=True).values
    return EigsResult(tuple(float(v) for v in vals), total, ok)


def _lanczos(
    hvp: HVP, p: int, k: int, iters: int, tol: float, like: torch.Tensor, g: torch.Generator
) -> EigsResult:
    """Lanczos with full reorthogonalisation; stops when the top-k residuals β|s_last| ≤ tol·|θ|."""
    m = min(iters, p)
    q = _start(p, 1, like, g)[:, 0]
    basis = [q]
    alphas: list[float] = []
    betas: list[float] = []
    vals = torch.zeros(0, dtype=torch.float64)
    for j in range(m):
        w = hvp(basis[j])
        a = float(basis[j] @ w)
        alphas.append(a)
        qmat = torch.stack(basis, dim=1)
        # Two passes of classical Gram-Schmidt against the whole basis keep it orthogonal
        # to working precision (this subsumes the three-term recurrence).
        w = w - qmat @ (qmat.T @ w)
        w = w - qmat @ (qmat.T @ w)
        b = float(w.norm())
        n = len(alphas)
        tri = torch.diag(torch.tensor(alphas, dtype=torch.float64))
        if n > 1:
            off = torch.tensor(betas, dtype=torch.float64)
            tri = tri + torch.diag(off, 1) + torch.diag(off, -1)
        theta, s = torch.linalg.eigh(tri)
        top = min(k, n)
        vals = theta.flip(0)[:top]
        resid = b * s[-1, :].flip(0)[:top].abs()
        scale = vals.abs().clamp_min(torch.finfo(torch.float64).tiny)
        invariant = b <= 1e-12 * max(1.0, float(theta.abs().max()))
        if (top == k and bool((resid <= tol * scale).all())) or invariant or n == p:
            return EigsResult(tuple(float(v) for v in vals), n, True)
        betas.append(b)
        basis.append(w / b)
    return EigsResult(tuple(float(v) for v in vals), m, False)


def hessian_top_eigenvalues(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    k: int = 3,
    *,
    method: str = "lanczos",
    iters: int = 100,
    tol: float = 1e-4,
    generator: torch.Generator | None = None,
    loss: LossFn | None = None,
    l2: float = 0.0,
) -> EigsResult:
    """The k largest Hessian eigenvalues of the loss on x [n, d], y [n], descending.

    ``method="lanczos"``: Lanczos with full reorthogonalisation (memory: ``iters``
    vectors of size P). ``method="power"``: block power iteration with Rayleigh-Ritz.
    ``iters`` caps the iterations (one Hessian-vector product each for Lanczos, k for
    the block method); ``tol`` is relative (see the two solvers). ``generator`` seeds
    the start vector (default: seed 0).
    """
    _check(method, iters, tol, k)
    obj = make_objective(model, x, y, loss=loss, l2=l2)
    hvp, theta = _hvp(obj)
    if k > theta.numel():
        raise ConfigError("k", k, f"at most the {theta.numel()} trainable parameters")
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    solver = _lanczos if method == "lanczos" else _power
    return solver(hvp, theta.numel(), k, iters, tol, theta, g)


def hessian_top_eigenvalue(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    method: str = "power",
    iters: int = 100,
    tol: float = 1e-4,
    generator: torch.Generator | None = None,
    loss: LossFn | None = None,
    l2: float = 0.0,
) -> EigResult:
    """λ_max of the loss Hessian on x [n, d], y [n] (sharpness); see ``hessian_top_eigenvalues``.

    Power iteration stops when the Rayleigh quotient changes by ≤ tol·|λ|; Lanczos
    when the Ritz residual β_j|s_j| ≤ tol·|λ|. ``converged`` is False when ``iters``
    ran out first (the value is then the last estimate).
    """
    r = hessian_top_eigenvalues(
        model, x, y, 1, method=method, iters=iters, tol=tol, generator=generator, loss=loss, l2=l2
    )
    return EigResult(r.values[0], r.iterations, r.converged)


def hessian_trace(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    samples: int = 100,
    generator: torch.Generator | None = None,
    chunk: int = 10,
    loss: LossFn | None = None,
    l2: float = 0.0,
) -> TraceResult:
    """Hutchinson's estimate of tr H: the mean of zᵀHz over Rademacher probes z ∈ {±1}^P.

    ``stderr`` = std(zᵀHz, ddof=1)/√samples. Probes come from ``generator`` (default
    seed 0) and are evaluated ``chunk`` at a time with a vmap-ed Hessian-vector product.
    """
    if not isinstance(samples, int) or samples < 1:
        raise ConfigError("samples", samples, "a positive integer")
    if not isinstance(chunk, int) or chunk < 1:
        raise ConfigError("chunk", chunk, "a positive integer")
    obj = make_objective(model, x, y, loss=loss, l2=l2)
    hvp, theta = _hvp(obj)
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    bhvp = vmap(hvp)
    quads = []
    for s in range(0, samples, chunk):
        b = min(chunk, samples - s)
        z = torch.randint(0, 2, (b, theta.numel()), generator=g, device=g.device)
        z = (2 * z - 1).to(theta.device, theta.dtype)
        quads.append((z * bhvp(z)).sum(dim=1).double())
    q = torch.cat(quads)
    se = float(q.std(unbiased=True) / math.sqrt(samples)) if samples > 1 else float("nan")
    return TraceResult(float(q.mean()), se, samples)
