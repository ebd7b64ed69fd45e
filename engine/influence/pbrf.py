"""The proximal Bregman response function (PBRF; Bae et al. 2022), a ground truth for
influence estimators (``influence_check``, docs/protocol.md#influence).

Influence functions do not approximate retraining from scratch (which, for a network, is
partly the chaos of training) but the response of the trained weights θ* to down-weighting
one point, kept close to θ* in output space and in weight space. For removed point i:

    θ_i = argmin_θ  (1/n) Σ_j D(f(x_j; θ), f(x_j; θ*))  −  ε ℓ(f(x_i; θ), y_i)
                    + (λ/2) ‖θ − θ*‖²                          (ε = 1/n: removal)

D(f, f*) = ℓ(f, t) − ℓ(f*, t) − ∇_f ℓ(f*, t)ᵀ(f − f*) is the Bregman divergence of the
per-example loss (engine.influence.losses; it does not depend on t): ‖f − f*‖² for our
squared error (no ½), KL(softmax f* ‖ softmax f) for the cross-entropy. λ is the training
objective's L2 coefficient: the Bregman divergence of (λ/2)‖θ‖² is exactly (λ/2)‖θ − θ*‖²,
so the PBRF is the Bregman divergence of the whole training objective R(θ) around θ*, and
its Hessian at θ* is the Gauss–Newton matrix plus λI, the damping ``gradient_influence``
uses. The true effect is Δ[t, i] = ℓ_t(θ_i) − ℓ_t(θ*): positive = helpful, the sign of
every estimator in ``engine.influence``; to first order in ε it is the influence
(1/n) ∇ℓ_tᵀ H⁻¹ ∇ℓ_i (``tests/engine/influence/test_pbrf.py``).

θ* need not be a minimiser of R (the PBRF's point): the objective is warm-started at θ*
and minimised deterministically, full batch, for every removed point at once (rows of
Θ [k, P]; the k problems are independent), by ``lbfgs`` (per-row L-BFGS with Armijo
backtracking) or ``newton`` (Newton–CG on exact Hessian-vector products): two
optimisers, so their agreement measures how well the truth is resolved. Each row stops
when ‖∇F_i‖ ≤ ``tol`` · ‖∇F_i(θ*)‖ = tol · ε‖∇ℓ_i(θ*)‖. A ReLU head's PBRF has its
minimiser on kinks, where no gradient vanishes: ``engine.influence.pbrf_relu`` takes the
L-BFGS iterate on from there to a Clarke-stationary point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call, grad, jvp, vmap

from engine.errors import ConfigError
from engine.influence.gradient import conjugate_gradient
from engine.influence.losses import check_loss, encode_targets, pointwise_loss

SOLVERS = ("lbfgs", "newton")


@dataclass(frozen=True)
class PBRFResult:
    """The PBRF's true effects and how well its optimisation converged."""

    effects: torch.Tensor
    """Δ [n_test, k]: test loss at θ_i minus at θ* (positive = helpful)."""
    grad_norm: torch.Tensor
    """[k] final ‖∇F_i‖ / ‖∇F_i(θ*)‖ per removed point."""
    steps: int
    """Outer iterations run (the slowest row's)."""
    tol: float
    early: PBRFResult | None = None
    """With ``checkpoint``: the result after that many iterations, exactly what a solve
    with ``max_steps = checkpoint`` gives (the iterations are deterministic)."""
    failures: tuple[str, ...] = ()
    """Per point, why its solve was refused other than by its gradient norm (the ReLU
    active set, ``engine.influence.pbrf_relu``: state not settled, a non-convex kink, the
    polish climbed; those rows carry norm inf), "" where it was not; () when none can be."""

    @property
    def converged(self) -> bool:
        """Every row reached the relative gradient tolerance."""
        return bool(self.point_converged.all())

    @property
    def point_converged(self) -> torch.Tensor:
        """[k] bool: the rows whose solve reached the relative gradient tolerance (the only
        ones a statistic of the PBRF truth may use, docs/protocol.md#influence)."""
        return self.grad_norm <= self.tol

    def reasons(self) -> list[str]:
        """Per point, "" where it converged, else why not (one short phrase)."""
        out = []
        for row, (gn, ok) in enumerate(zip(self.grad_norm.tolist(), self.point_converged)):
            why = self.failures[row] if row < len(self.failures) else ""
            out.append("" if bool(ok) else why or f"gradient norm {gn:.1e} > tol {self.tol:g}")
        return out


class _Problem:
    """The k PBRF objectives F_i(θ_i), rows of Θ [k, P], for the model's trainable θ."""

    def __init__(
        self,
        model: nn.Module,
        x: torch.Tensor,
        t: torch.Tensor,
        indices: torch.Tensor,
        lam: float,
        loss: str,
        eps: float,
    ) -> None:
        named = [(k, v) for k, v in model.named_parameters() if v.requires_grad]
        if not named:
            raise ConfigError("model", type(model).__name__, "a model with trainable parameters")
        self.model, self.names = model, [k for k, _ in named]
        self.shapes, self.sizes = [v.shape for _, v in named], [v.numel() for _, v in named]
        self.theta = torch.cat([v.detach().reshape(-1) for _, v in named])
        frozen = {k: v.detach() for k, v in model.named_parameters() if not v.requires_grad}
        self.consts = {**frozen, **{k: v.detach() for k, v in model.named_buffers()}}
        self.x, self.t, self.idx, self.lam, self.loss, self.eps = x, t, indices, lam, loss, eps
        self.n = x.shape[0]
        with torch.no_grad():
            self.f0 = self.forward(self.theta, x)  # f(x_j; θ*) [n, K]
        f0 = self.f0.detach().requires_grad_(True)
        g = torch.autograd.grad(pointwise_loss(f0, t, loss).sum(), f0)[0]
        self.g0, self.l0 = g.detach(), pointwise_loss(self.f0, t, loss)  # ∇_f ℓ, ℓ at θ*

    def slack(self, val: torch.Tensor) -> torch.Tensor:
        """The round-off of F (its terms are losses of order ℓ): a line search accepts a
        step that does not raise F by more, else steps near the optimum, whose decrease
        is below round-off, would all be refused."""
        scale = val.abs() + self.l0.abs().mean() + self.eps * self.l0[self.idx].abs()
        return 64 * torch.finfo(val.dtype).eps * scale

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        parts = torch.split(theta, self.sizes)
        params = {k: p.reshape(s) for k, p, s in zip(self.names, parts, self.shapes)}
        out = functional_call(self.model, (params, self.consts), (x,))
        return out if out.ndim == 2 else out.reshape(x.shape[0], -1)

    def rows(self, big: torch.Tensor) -> torch.Tensor:
        """F_i(Θ_i) for every row: Θ [k, P] → [k]."""
        f = vmap(self.forward, in_dims=(0, None))(big, self.x)  # [k, n, K]
        if self.loss == "mse":  # the closed form: no cancellation in F or its gradient
            d = ((f - self.f0) ** 2).sum(-1)
        else:
            d = pointwise_loss(f, self.t, self.loss) - self.l0 - ((f - self.f0) * self.g0).sum(-1)
        k = torch.arange(big.shape[0], device=big.device)
        own = pointwise_loss(f[k, self.idx], self.t[self.idx], self.loss)
        prox = ((big - self.theta) ** 2).sum(1)
        return d.mean(1) - self.eps * own + 0.5 * self.lam * prox

    def value_grad(self, big: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(F [k], ∇F [k, P]); the rows are independent, so ∇ of the sum is per row."""
        with torch.enable_grad():
            b = big.detach().requires_grad_(True)
            v = self.rows(b)
            (g,) = torch.autograd.grad(v.sum(), b)
        return v.detach(), g.detach()

    def hvp(self, big: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
        """V [k, P] → each row's Hessian of F_i at Θ_i times V_i."""

        grad_sum = grad(lambda b: self.rows(b).sum())
        return lambda v: jvp(grad_sum, (big,), (v,))[1]


def _backtrack(
    prob: _Problem,
    big: torch.Tensor,
    d: torch.Tensor,
    val: torch.Tensor,
    slope: torch.Tensor,
    active: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Armijo backtracking per row from the unit step: (new Θ, rows where 40 halvings
    found no decrease; those keep Θ and stop)."""
    step = torch.ones_like(val)
    fail = active
    for _ in range(40):
        new = big + step[:, None] * d
        nval = prob.rows(new)
        fail = (nval > val + 1e-4 * step * slope + prob.slack(val)) & active
        if not bool(fail.any()):
            return new, fail
        step = torch.where(fail, step / 2, step)
    return torch.where(fail[:, None], big, big + step[:, None] * d), fail


Hook = Callable[[int, torch.Tensor, torch.Tensor], None]
"""Called after each outer iteration with (iterations run, Θ [k, P], relative ‖∇F‖ [k])."""


def _lbfgs(prob: _Problem, tol: float, max_steps: int, hook: Hook, history: int = 20):
    """Per-row L-BFGS (two-loop recursion) with Armijo backtracking from the unit step."""
    big = prob.theta.expand(prob.idx.numel(), -1).clone()
    val, g = prob.value_grad(big)
    g0 = g.norm(dim=1).clamp_min(torch.finfo(g.dtype).tiny)
    stalled = torch.zeros_like(val, dtype=torch.bool)  # no decrease found: at round-off
    ss: list[torch.Tensor] = []
    ys: list[torch.Tensor] = []
    rhos: list[torch.Tensor] = []  # 1 / sᵀy per pair (0 for a skipped pair)
    # the first direction: the exact line minimiser of the quadratic model along −g
    hg = prob.hvp(big)(g)
    gamma = ((g * g).sum(1) / (g * hg).sum(1).clamp_min(torch.finfo(g.dtype).tiny))[:, None]
    steps = 0
    while steps < max_steps:
        active = (g.norm(dim=1) > tol * g0) & ~stalled
        if not bool(active.any()):
            break
        # the two-loop recursion, in place (vecdot, addcmul_: no [k, P] temporaries; it
        # streams 2·history [k, P] pairs a step and dominated the solve's time)
        q = g.clone()
        alphas = []
        for s, y, rho in zip(reversed(ss), reversed(ys), reversed(rhos)):
            a = rho * torch.linalg.vecdot(s, q)
            q.addcmul_(a[:, None], y, value=-1.0)
            alphas.append(a)
        r = gamma * q
        for s, y, rho, a in zip(ss, ys, rhos, reversed(alphas)):
            b = rho * torch.linalg.vecdot(y, r)
            r.addcmul_((a - b)[:, None], s)
        d = -r
        slope = (g * d).sum(1)
        bad = slope >= 0  # not a descent direction: steepest descent for that row
        d = torch.where(bad[:, None], -gamma * g, d)
        slope = (g * d).sum(1)
        d = d * active[:, None]
        new, stuck = _backtrack(prob, big, d, val, slope, active)
        stalled |= stuck
        nval, ng = prob.value_grad(new)
        s, y = new - big, ng - g
        sy = (s * y).sum(1)
        # a row without positive curvature (or converged: s = 0) skips this pair: zeros
        # drop out of the two-loop recursion
        ok = (sy > 1e-12 * (s.norm(dim=1) * y.norm(dim=1))) & (sy > 0)
        ss.append(s * ok[:, None])
        ys.append(y * ok[:, None])
        rhos.append(torch.where(ok, 1.0 / sy.clamp_min(torch.finfo(g.dtype).tiny), 0.0))
        if len(ss) > history:
            ss.pop(0)
            ys.pop(0)
            rhos.pop(0)
        new_gamma = sy / (y * y).sum(1).clamp_min(torch.finfo(g.dtype).tiny)
        gamma = torch.where(ok[:, None], new_gamma[:, None], gamma)
        big, val, g = new, nval, ng
        steps += 1
        hook(steps, big, g.norm(dim=1) / g0)
    return big, g.norm(dim=1) / g0, steps


def _newton(prob: _Problem, tol: float, max_steps: int, hook: Hook):
    """Newton–CG: per row, CG on exact Hessian-vector products, then Armijo backtracking."""
    big = prob.theta.expand(prob.idx.numel(), -1).clone()
    val, g = prob.value_grad(big)
    g0 = g.norm(dim=1).clamp_min(torch.finfo(g.dtype).tiny)
    stalled = torch.zeros_like(val, dtype=torch.bool)  # no decrease found: at round-off
    steps = 0
    while steps < max_steps:
        active = (g.norm(dim=1) > tol * g0) & ~stalled
        if not bool(active.any()):
            break
        # inexact Newton: each solve to 1e-4 of the current gradient (linear rate 1e-4)
        d, _ = conjugate_gradient(prob.hvp(big), -g * active[:, None], tol=1e-4, maxiter=500)
        slope = (g * d).sum(1)
        # negative curvature met by CG (or no descent): a gradient step for that row
        bad = ~(slope < 0) | ~torch.isfinite(d).all(1)
        d = torch.where(bad[:, None], -g, d) * active[:, None]
        slope = (g * d).sum(1)
        new, stuck = _backtrack(prob, big, d, val, slope, active)
        stalled |= stuck
        val, g = prob.value_grad(new)
        big = new
        steps += 1
        hook(steps, big, g.norm(dim=1) / g0)
    return big, g.norm(dim=1) / g0, steps


def pbrf_effects(
    model: nn.Module,
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    indices: Sequence[int] | torch.Tensor,
    *,
    lam: float,
    loss: str = "mse",
    solver: str = "lbfgs",
    tol: float,
    max_steps: int = 1000,
    epsilon: float | None = None,
    checkpoint: int | None = None,
) -> PBRFResult:
    """The PBRF true effects Δ [n_test, k] of removing each training point of ``indices``
    (module docstring), θ* = the model's trainable parameters (not modified).

    x [n, d], y as ``gradient_influence`` takes them (±1 floats, int labels, float [n, K]);
    ``loss`` ``mse`` | ``ce``; ``lam`` > 0 the training L2 (the proximity weight);
    ``solver`` ``lbfgs`` | ``newton``; ``tol`` the relative gradient norm at which a row
    stops (no default here: the run's is ``influence_check.pbrf_tol``); ``epsilon`` the
    down-weighting (None: 1/n); at most ``max_steps`` outer iterations. Runs on the
    parameters' device and dtype.
    ``checkpoint`` (< ``max_steps``): also the result after that many iterations
    (``PBRFResult.early``), from the same solve: the first ``checkpoint`` iterations of a
    longer solve are those of a shorter one, so two step budgets cost one solve.
    """
    check_loss(loss)
    if solver not in SOLVERS:
        raise ConfigError("solver", solver, f"one of {', '.join(SOLVERS)}")
    if not (lam > 0):
        raise ConfigError("lam", lam, "a positive L2 / damping coefficient")
    if not (tol > 0):
        raise ConfigError("tol", tol, "a positive relative gradient norm")
    if checkpoint is not None and not 0 < checkpoint < max_steps:
        raise ConfigError("checkpoint", checkpoint, f"an iteration count from 1 to {max_steps - 1}")
    p0 = next(p for p in model.parameters() if p.requires_grad)
    dev, dt = p0.device, p0.dtype
    xtr, xte = x_train.to(dev, dt), x_test.to(dev, dt)
    idx = torch.as_tensor(indices, dtype=torch.long, device=dev).reshape(-1)
    n = xtr.shape[0]
    if not idx.numel() or int(idx.min()) < 0 or int(idx.max()) >= n:
        raise ConfigError("indices", idx.tolist()[:5], f"at least one index in 0..{n - 1}")
    with torch.no_grad():
        k_out = int(model(xtr[:1]).reshape(1, -1).shape[1])
    ttr = encode_targets(y_train, k_out, dtype=dt).to(dev, dt)
    tte = encode_targets(y_test, k_out, dtype=dt).to(dev, dt)
    eps = 1.0 / n if epsilon is None else float(epsilon)
    prob = _Problem(model, xtr, ttr, idx, lam, loss, eps)
    run = _lbfgs if solver == "lbfgs" else _newton
    snap: list[tuple[torch.Tensor, torch.Tensor, int]] = []

    def hook(steps: int, big: torch.Tensor, gn: torch.Tensor) -> None:
        if steps == checkpoint:
            snap.append((big.clone(), gn.clone(), steps))

    with torch.no_grad():
        big, gn, steps = run(prob, tol, max_steps, hook)
        base = pointwise_loss(prob.forward(prob.theta, xte), tte, loss)  # [t]

        def result(big: torch.Tensor, gn: torch.Tensor, steps: int) -> PBRFResult:
            out = vmap(prob.forward, in_dims=(0, None))(big, xte)  # [k, t, K]
            effects = (pointwise_loss(out, tte, loss) - base).T
            return PBRFResult(effects.to(torch.float64), gn.cpu(), steps, tol)

        final = result(big, gn, steps)
        if checkpoint is None:
            return final
        # stopped (converged or stalled) before the checkpoint: the shorter solve is this one
        early = result(*snap[0]) if snap else final
    return dataclasses.replace(final, early=early)
