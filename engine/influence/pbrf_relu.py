"""The PBRF of a ReLU head on fixed features, solved exactly by an active set over its kinks
(``influence_check``'s truth for 2L-ReLU and MLP-Attn; docs/protocol.md#influence).

The model: f(x_j) = aᵀ relu(W φ_j) / √m with a [m, K] fixed and W trained, so
z_j = W*φ_j + B ψ_j (ψ_j = Qᵀφ_j, ``engine.malleability.check.span_problem``). The PBRF
objective of ``engine.influence.pbrf`` is then piecewise smooth in B (piecewise quadratic
for the squared error): smooth wherever no pre-activation z_uj is zero, with a kink where
one is, and its minimiser sits on kinks (docs/benchmarks.md#influence-check-pbrf), where no
gradient vanishes and no smooth optimiser meets a gradient tolerance.

The solve fixes a *state* per (training point j, unit u): on (z_uj > 0), off (z_uj < 0)
or pinned (z_uj = 0). In a fixed state f is linear in B and the objective is a smooth
convex problem whose stationary point has the representer form (λ the proximity weight)

    B = A Ψ,   A_ju = −(1/(λ√m)) s_ju aᵤ·w_j     (on: s = 1, off: s = 0)
    A_ju = μ_ju free, with the constraint z_uj = 0    (pinned)

w_j = ∂(data term)/∂f_j [K]: n·K + |pinned| unknowns, solved by Newton on a dense system
(exact in one step for the squared error) built from the Gram matrix G = ΨΨᵀ = ΦΦᵀ.
Then the state is updated from the solution: a free pair whose z changed sign is pinned;
a pinned pair is released when the objective descends leaving its kink: with the kink
multiplier σ = −λ√m μ / c (c = aᵤ·w_j the active side's slope) the slope to the on
side is c(1 − σ), to the off side cσ, both ≥ 0 exactly at a minimum there (c > 0, σ in
[0, 1]); it leaves by the steeper. Repeat until the state is stable.

Every pair changing at once (a block round) need not converge: F is not convex across
kinks, and where the features are nearly dependent (MNIST's MLP-Attn: G of numerical
rank 122 of 200) the multipliers of a unit pinned on many points run to 10³–10⁶, so
hundreds of pairs are pinned and released again each round, a state that oscillates
without ever repeating (docs/benchmarks.md#influence-check-pbrf). The block rounds are
tried first (``run_block``: on a well-conditioned head they settle in a few rounds); a
point whose state has not settled in ``BLOCK_ROUNDS`` starts over from the warm start
with monotone rounds (``run``), where each round's solution is a candidate and F is the
merit: a point is kept only when F falls strictly
below the last kept one (the best of the steps 1, ½, …, 2⁻¹⁰ towards the candidate,
``descent``). A full step keeps the candidate and its state updates as above; a partial
one keeps a point inside the kinks, whose own sign pattern is the next state; where no
step falls, the next state is the kept point's own piece, on which F is a convex
quadratic, and if its candidate too finds no step, the round steps to the first pair
that reaches its kink on the way (F falls there; the classical primal active set) and
pins it. From a kept point that is its piece's minimiser after such a round, one pair
(the worst) changes, not all. F strictly falls from kept point to kept point and each
state's minimiser is unique, so no state's minimiser is kept twice: no cycle, and the
solution is never above the start (L-BFGS's iterate in ``polished_pbrf``).

The criterion (checked a posteriori, ``stationarity``): with every pinned pair's σ
clipped to [0, 1], the generalised gradient (R + λA)Ψ, R_ju = ∂(data)/∂z_uj (σ times the
active side's slope on a pinned pair), an element of the Clarke subdifferential of the
objective, has norm ≤ tol · ‖∇F_i(θ*)‖, and every pinned kink is convex (aᵤ·w_j > 0):
then the point is a strict local minimiser (each piece is strongly convex, each kink
term locally a convex max). Pinned pairs have |z| at round-off.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.func import grad, jacfwd, vmap

from engine.device import torch_threads
from engine.influence.losses import pointwise_loss
from engine.influence.pbrf import PBRFResult, _lbfgs, _Problem

BLOCK_ROUNDS = 50
"""Block rounds (``_Point.run_block``) before a point's solve falls back to the monotone
rounds (``_Point.run``)."""

MAX_ROUNDS = 400
"""Rounds per point before the state is called unsettled (a cost cap: rounds are monotone
in F; on MNIST 3 vs 8 MLP-Attn seed 1 the points that settled took 3–278,
docs/benchmarks.md#influence-check-pbrf)."""

SIGMA_SLACK = 1e-9
"""How far outside [0, 1] a kink multiplier may sit (round-off) and still count inside."""


@dataclass(frozen=True)
class ReluHead:
    """A ReLU head's PBRF data, float64: z [n, m] = W*φ_j (training pre-activations),
    gram [n, n] = ΦΦᵀ, a [m, K] output weights, t [n, K] encoded targets; the test side
    zt [t, m], cross [t, n] = Φ_t Φᵀ, tt [t, K]."""

    z: torch.Tensor
    gram: torch.Tensor
    a: torch.Tensor
    t: torch.Tensor
    zt: torch.Tensor
    cross: torch.Tensor
    tt: torch.Tensor

    @classmethod
    def from_span(
        cls, output: torch.Tensor, inp: torch.Tensor, inp_t: torch.Tensor, t, tt
    ) -> ReluHead:
        """From ``span_problem``'s head inputs [z* | ψ] (train [n, m + r], test [t, m + r]),
        its output weights a [m, K] and encoded targets t [n, K], tt [t, K]."""
        m = output.shape[0]
        psi, psi_t = inp[:, m:], inp_t[:, m:]
        return cls(inp[:, :m], psi @ psi.T, output, t, inp_t[:, :m], psi_t @ psi.T, tt)

    def out(self, z: torch.Tensor) -> torch.Tensor:
        """Pre-activations [.., m] → outputs [.., K]."""
        return torch.relu(z) @ self.a / self.a.shape[0] ** 0.5


@dataclass
class _Solve:
    """One removed point's solve: its state and solution."""

    a_mat: torch.Tensor  # A [n, m]
    pinned: torch.Tensor  # [n, m] bool
    on: torch.Tensor  # [n, m] bool (free pairs' side)
    sigma: torch.Tensor  # [n, m] the kink multipliers (0 off the pinned pairs)
    rounds: int
    stable: bool


def _grads(loss: str):
    """(∇ℓ, ∇²ℓ) of the per-example loss in f, batched: f, t [n, K] → [n, K], [n, K, K]."""

    def one(f: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return pointwise_loss(f, t, loss)

    g = grad(one)
    return vmap(g), vmap(jacfwd(g))


def _solve(mat: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """mat⁻¹ rhs by LU; least squares where the state made mat singular (a unit pinned on
    more points than the features' rank)."""
    sol, info = torch.linalg.solve_ex(mat, rhs)
    if int(info) != 0 or not bool(torch.isfinite(sol).all()):
        sol = torch.linalg.lstsq(mat, rhs[:, None], driver="gelsd").solution[:, 0]
    return sol


class _Point:
    """The system of one removed point i (module docstring)."""

    def __init__(self, h: ReluHead, i: int, lam: float, loss: str, eps: float) -> None:
        self.h, self.i, self.lam, self.eps, self.loss = h, i, lam, eps, loss
        self.n, self.m = h.z.shape
        self.k = h.a.shape[1]
        self.rm = self.m**0.5
        self.d1, self.d2 = _grads(loss)
        # the squared error's w is linear in f: one Newton step from any w is exact
        self.iters = 1 if loss == "mse" else 30
        self.f0 = h.out(h.z)
        self.g0 = self.d1(self.f0, h.t)
        self.l0 = pointwise_loss(self.f0, h.t, loss)
        self.wt = torch.full((self.n, 1), 1.0 / self.n, dtype=h.z.dtype)
        self.wt[i] -= eps  # the weight of each point's loss in the data term

    def w_of(self, f: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """w = ∂(data)/∂f [n, K] and its Jacobian, block-diagonal [n, K, K]."""
        g = self.d1(f, self.h.t)
        w = (g - self.g0) / self.n
        w[self.i] -= self.eps * g[self.i]
        return w, self.wt[:, :, None] * self.d2(f, self.h.t)

    def a_of(self, w, mu, on, pinned) -> torch.Tensor:
        """A [n, m] from w [n, K] and the pinned pairs' values μ."""
        a_mat = -(on * (w @ self.h.a.T)) / (self.lam * self.rm)
        a_mat[pinned] = mu
        return a_mat

    def solve(self, on, pinned, w) -> tuple[torch.Tensor, torch.Tensor]:
        """Newton on the fixed state's stationarity (w, μ): (w, μ)."""
        h, n, k, g = self.h, self.n, self.k, self.h.gram
        onf = on.to(g.dtype)
        sa = onf[:, :, None] * h.a[None]  # [n, m, K]: s_ju a_uk
        kf = torch.einsum("juk,luv->jklv", sa, sa) * g[:, None, :, None] / self.m
        kf = kf.reshape(n * k, n * k)
        pj, pu = pinned.nonzero(as_tuple=True)
        npin = pj.numel()
        # f (flattened [n K]) = fc − kf w / λ + cfm μ;  z_P = z*_P + cmw w + cmm μ
        fc = torch.einsum("ju,uk->jk", onf * h.z, h.a).reshape(-1) / self.rm
        cfm = (h.a[pu].T[None] * (onf[:, pu] * g[:, pj])[:, None, :]).reshape(n * k, npin) / self.rm
        cmw = -cfm.T / self.lam
        cmm = g[pj][:, pj] * (pu[:, None] == pu[None, :])
        zp = h.z[pj, pu]
        mu = torch.zeros(npin, dtype=g.dtype)
        eye = torch.eye(n * k, dtype=g.dtype)
        for _ in range(self.iters):
            wf = w.reshape(-1)
            f = (fc - kf @ wf / self.lam + cfm @ mu).reshape(n, k)
            hw, hj = self.w_of(f)
            hb = torch.block_diag(*hj) if k > 1 else torch.diag(hj.reshape(-1))
            r = torch.cat([wf - hw.reshape(-1), zp + cmw @ wf + cmm @ mu])
            jac = torch.cat(
                [
                    torch.cat([eye + hb @ kf / self.lam, -hb @ cfm], 1),
                    torch.cat([cmw, cmm], 1),
                ]
            )
            step = _solve(jac, -r)
            w = w + step[: n * k].reshape(n, k)
            mu = mu + step[n * k :]
            if bool(step.abs().max() <= 1e-13 * torch.cat([w.reshape(-1), mu]).abs().max()):
                break
        return w, mu

    def sigma(self, w, a_mat, pinned) -> tuple[torch.Tensor, torch.Tensor]:
        """(σ [n, m] on the pinned pairs, the kink slopes c = aᵤ·w_j [n, m])."""
        c = w @ self.h.a.T
        s = torch.where(pinned, -self.lam * self.rm * a_mat / torch.where(c == 0, 1.0, c), 0.0)
        return s, c

    def data(self, f: torch.Tensor) -> torch.Tensor:
        """F_i's data terms at the outputs f [n, K] (``_Problem.rows``' closed form for the
        squared error): F_i = data + (λ/2)‖B‖²."""
        h = self.h
        if self.loss == "mse":
            d = ((f - self.f0) ** 2).sum(-1)
        else:
            d = pointwise_loss(f, h.t, self.loss) - self.l0 - ((f - self.f0) * self.g0).sum(-1)
        return d.mean() - self.eps * pointwise_loss(f[self.i], h.t[self.i], self.loss)

    def value(self, a_mat: torch.Tensor) -> torch.Tensor:
        """F_i at A [n, m] (B = AᵀΨ, so ‖B‖² = Σᵤ Aᵤᵀ G Aᵤ): the merit of ``run``."""
        h = self.h
        prox = torch.einsum("ju,jl,lu->", a_mat, h.gram, a_mat)
        return self.data(h.out(h.z + h.gram @ a_mat)) + 0.5 * self.lam * prox

    def violations(
        self,
        w: torch.Tensor,
        a_mat: torch.Tensor,
        on: torch.Tensor,
        pinned: torch.Tensor,
        z: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        """The pairs the state (on, pinned) gets wrong at its solution (A, z [n, m]):
        (σ, c, crossed, up, down, right, left) with ``crossed`` the free pairs whose z
        changed sign, ``up``/``down`` the pinned ones that leave their kink to the on/off
        side, and right = c(1 − σ), left = cσ the objective's slopes leaving the kink to
        either side (both ≥ 0 at a minimum there; a pair leaves by the steeper descent)."""
        s, c = self.sigma(w, a_mat, pinned)
        crossed = ~pinned & (on != (z > 0)) & (z != 0)
        right, left = c * (1 - s), c * s
        tiny = SIGMA_SLACK * c.abs()
        up = pinned & (right < -tiny) & (right <= left)
        down = pinned & (left < -tiny) & (left < right)
        return s, c, crossed, up, down, right, left

    def run_block(self, on: torch.Tensor, pinned: torch.Tensor, max_rounds: int) -> _Solve:
        """The block rounds, tried first: every violated pair changes at once, until the
        state comes back (a cycle); from then on only the worst one per round (violation
        measured in z for a free pair, in σ for a pinned one). On a well-conditioned head
        they settle in a few rounds (4–5 on the tests' heads, where ``run`` takes 24–195);
        where they do not (MNIST's MLP-Attn seed 1: 37 of 40 points), ``run`` starts over
        from the warm start (``relu_head_pbrf``)."""
        w = torch.zeros(self.n, self.k, dtype=self.h.z.dtype)
        seen: set[bytes] = set()
        single = False
        zscale = float(self.h.z.abs().median())
        for rounds in range(1, max_rounds + 1):
            w, mu = self.solve(on, pinned, w)
            a_mat = self.a_of(w, mu, on, pinned)
            z = self.h.z + self.h.gram @ a_mat
            s, c, crossed, up, down, right, left = self.violations(w, a_mat, on, pinned, z)
            change = crossed | up | down
            if not bool(change.any()):
                return _Solve(a_mat, pinned, on, s, rounds, True)
            if single:
                badness = torch.where(
                    crossed,
                    z.abs() / zscale,
                    -torch.minimum(right, left) / c.abs().clamp_min(1e-300),
                )
                worst = int(torch.where(change, badness, -1.0).reshape(-1).argmax())
                one = torch.zeros_like(change)
                one.view(-1)[worst] = True
                crossed, up, down = crossed & one, up & one, down & one
            key = (pinned | crossed).numpy().tobytes() + (on | up).numpy().tobytes()
            on = (on | up) & ~down & ~crossed
            pinned = (pinned | crossed) & ~up & ~down
            if key in seen:  # a cycle: the state came back
                single = True
            seen.add(key)
        return _Solve(a_mat, pinned, on, s, rounds, False)

    def run(
        self, on: torch.Tensor, pinned: torch.Tensor, max_rounds: int, a0: torch.Tensor
    ) -> _Solve:
        """The active-set rounds from the state (on, pinned) and the point A0 [n, m] it
        was read from, each kept point strictly below the last in F (module docstring)."""
        h = self.h
        w = torch.zeros(self.n, self.k, dtype=h.z.dtype)
        kept, fk = a0, self.value(a0)
        kp = pinned  # the pairs at their kink at the kept point (z = 0 to round-off)
        own_piece = False  # the state is the kept point's own piece (its sign pattern)
        s = torch.zeros_like(h.z)
        zscale = float(h.z.abs().median())
        for rounds in range(1, max_rounds + 1):
            w, mu = self.solve(on, pinned, w)
            a_mat = self.a_of(w, mu, on, pinned)
            z0 = h.z + h.gram @ kept
            z1 = h.z + h.gram @ a_mat
            t = self.descent(kept, a_mat, z0, z1, fk)
            if t == 0.0 and own_piece:
                # no halving lowered F (the candidate lies beyond kinks F climbs over):
                # F is this piece's convex quadratic up to the first pair that reaches
                # its kink, and falls there (strictly, unless the kept point minimises
                # the piece); stop there and pin that pair
                leave = ~pinned & (on != (z1 > 0)) & (z1 != 0)
                # (≥ 0: a pair at its kink to round-off stops the step there)
                tt = torch.where(leave, (z0 / (z0 - z1)).clamp_min(0), torch.inf)
                t = min(float(tt.min()), 1.0)
                hit = leave & (tt <= t)
                # a pinned pair carries on = False (``solve`` counts it through μ)
                pinned, on = pinned | hit, on & ~hit
                kp = pinned
            if t == 0.0:
                # the block round climbed at every step length (F is not convex across
                # kinks: pairs changed together can undo each other, and the state then
                # oscillates without repeating): back to the kept point's own piece
                pinned, on = kp, (z0 > 0) & ~kp
                own_piece = True
                continue
            if t < 1.0:
                kept = kept + t * (a_mat - kept)
                fk = self.value(kept)
                # at zero at both ends: still pinned; every other pair has its sign
                kp = kp & pinned
                pinned, on = kp, ((h.z + h.gram @ kept) > 0) & ~kp
                own_piece = True
                continue
            kept, fk, kp = a_mat, self.value(a_mat), pinned  # the state's minimiser
            s, c, crossed, up, down, right, left = self.violations(w, a_mat, on, pinned, z1)
            change = crossed | up | down
            if not bool(change.any()):
                return _Solve(a_mat, pinned, on, s, rounds, True)
            if own_piece:  # a block round climbed since the last: one pair (the worst)
                badness = torch.where(
                    crossed,
                    z1.abs() / zscale,
                    -torch.minimum(right, left) / c.abs().clamp_min(1e-300),
                )
                one = torch.zeros_like(change)
                one.view(-1)[int(torch.where(change, badness, -1.0).reshape(-1).argmax())] = True
                crossed, up, down = crossed & one, up & one, down & one
            on = (on | up) & ~down & ~crossed
            pinned = (pinned | crossed) & ~up & ~down
            own_piece = False
        return _Solve(kept, pinned, on, s, rounds, False)

    def descent(self, a0, a1, z0, z1, f0: torch.Tensor, halvings: int = 10) -> float:
        """The step t in {1, ½, …, 2⁻ʰᵃˡᵛⁱⁿᵍˢ} from A0 towards A1 [n, m] (z0, z1 their
        pre-activations [n, m]) with the lowest F, if that is strictly below f0; else 0.0.
        On the segment z is linear in t and ‖B‖² quadratic: no product with G per trial."""
        h = self.h
        da = a1 - a0
        gd = h.gram @ da
        q0 = (a0 * (h.gram @ a0)).sum()
        q1, q2 = 2 * (a0 * gd).sum(), (da * gd).sum()
        t, t_best, best = 1.0, 0.0, f0
        for _ in range(halvings + 1):
            val = self.data(h.out(z0 + t * (z1 - z0))) + 0.5 * self.lam * (q0 + t * q1 + t * t * q2)
            if bool(val < best):
                best, t_best = val, t
            t /= 2
        return t_best

    def stationarity(self, sol: _Solve) -> tuple[float, bool]:
        """(‖generalised gradient‖ / ‖∇F_i(θ*)‖, every pinned kink convex) at the solution,
        recomputed from A alone (module docstring)."""
        h, a_mat, pinned = self.h, sol.a_mat, sol.pinned
        z = h.z + h.gram @ a_mat
        w, _ = self.w_of(h.out(z))
        c = w @ h.a.T
        act = torch.where(pinned, sol.sigma.clamp(0, 1), (z > 0).to(z.dtype))
        gen = act * c / self.rm + self.lam * a_mat
        w0, _ = self.w_of(self.f0)
        r0 = (h.z > 0) * (w0 @ h.a.T) / self.rm
        norm = torch.einsum("ju,jl,lu->", gen, h.gram, gen).clamp_min(0).sqrt()
        norm0 = torch.einsum("ju,jl,lu->", r0, h.gram, r0).clamp_min(0).sqrt()
        convex = bool((c[pinned] > 0).all())
        return float(norm / norm0.clamp_min(torch.finfo(z.dtype).tiny)), convex


@dataclass(frozen=True)
class ReluPBRF:
    """Effects Δ [t, k], per point: relative generalised-gradient norm, convex kinks, state
    stable, rounds, pinned pairs; and F_i at the solutions [k] (for comparisons)."""

    effects: torch.Tensor
    grad_norm: torch.Tensor
    convex: torch.Tensor
    stable: torch.Tensor
    rounds: torch.Tensor
    pinned: torch.Tensor
    a_mats: list[torch.Tensor]


def relu_head_pbrf(
    h: ReluHead,
    indices: Sequence[int],
    *,
    lam: float,
    loss: str,
    epsilon: float | None = None,
    max_rounds: int = MAX_ROUNDS,
    start: torch.Tensor | None = None,
) -> ReluPBRF:
    """The PBRF of removing each of ``indices`` (module docstring), by active set.

    The start is θ* (A = 0); or, given ``start`` [k, n, m] (each point's pre-activations
    at a warm start, e.g. L-BFGS's, ``polished_pbrf``), the A with z* + GA = start (least
    squares); the first state is the start's sign pattern, nothing pinned, and every kept
    point is below the start in F. The PBRF of a ReLU network is not convex: other starts
    can end at other (nearby) local minima, each meeting the criterion.
    """
    n = h.z.shape[0]
    eps = 1.0 / n if epsilon is None else float(epsilon)
    pin0 = torch.zeros_like(h.z, dtype=torch.bool)
    base = pointwise_loss(h.out(h.zt), h.tt, loss)
    a0s = torch.zeros(len(indices), *h.z.shape, dtype=h.z.dtype)
    if start is not None:  # the start's A (z = z* + G A; least squares: G may be singular)
        dz = (start - h.z).permute(1, 0, 2).reshape(n, -1)
        sol0 = torch.linalg.lstsq(h.gram, dz, driver="gelsd").solution
        a0s = sol0.reshape(n, len(indices), -1).permute(1, 0, 2)
    effects, gn, cv, st, rd, pn, mats = [], [], [], [], [], [], []
    for row, i in enumerate(indices):
        pt = _Point(h, int(i), lam, loss, eps)
        a0 = a0s[row].contiguous()
        # its systems are small ([n·K + pinned]²): a second thread only spins, 3-10× the
        # CPU under load (docs/benchmarks.md#influence-check-pbrf)
        with torch_threads(1):
            on0 = (h.z + h.gram @ a0) > 0
            budget = min(BLOCK_ROUNDS, max_rounds)  # max_rounds caps both kinds together
            sol = pt.run_block(on0, pin0.clone(), budget)
            if not sol.stable and max_rounds > budget:
                # an oscillating state: the monotone rounds, from the start
                mono = pt.run(on0, pin0.clone(), max_rounds - budget, a0)
                sol = dataclasses.replace(mono, rounds=sol.rounds + mono.rounds)
        norm, convex = pt.stationarity(sol)
        zt = h.zt + h.cross @ sol.a_mat
        effects.append(pointwise_loss(h.out(zt), h.tt, loss) - base)
        gn.append(norm)
        cv.append(convex)
        st.append(sol.stable)
        rd.append(sol.rounds)
        pn.append(int(sol.pinned.sum()))
        mats.append(sol.a_mat)
    return ReluPBRF(
        torch.stack(effects, 1),
        torch.tensor(gn, dtype=torch.float64),
        torch.tensor(cv),
        torch.tensor(st),
        torch.tensor(rd),
        torch.tensor(pn),
        mats,
    )


def polished_pbrf(
    prob: _Problem,
    h: ReluHead,
    *,
    steps: int,
    tol: float,
    checkpoint: int | None = None,
    max_rounds: int = MAX_ROUNDS,
) -> PBRFResult:
    """The PBRF of the span head (``engine.malleability.check._SpanHead``: rows of Θ = B
    [k, m·r]) for every removed point at once: ``steps`` L-BFGS iterations from θ*
    (``engine.influence.pbrf._lbfgs``, batched over the points), then the active set from
    the state L-BFGS reached (``relu_head_pbrf(start=…)``), which lands on a kink-exact
    local minimiser near it, a few rounds away.

    ``grad_norm`` is the active set's relative generalised-gradient norm (module
    docstring), set to inf for a point whose state did not settle, whose kinks are not
    all convex, or whose objective ends above L-BFGS's by more than round-off (the
    polish must not climb): ``converged`` is then False. With ``checkpoint`` (< steps):
    ``early`` is the same polish from L-BFGS's iterate at ``checkpoint`` steps (one
    L-BFGS run; two warm starts of the active set, whose agreement is its noise floor).
    """
    k, m = prob.idx.numel(), h.z.shape[1]
    psi = prob.x[:, m:]
    snap: list[tuple[torch.Tensor, int]] = []

    def hook(ran: int, big: torch.Tensor, _gn: torch.Tensor) -> None:
        if ran == checkpoint:
            snap.append((big.clone(), ran))

    with torch.no_grad():
        big, _, ran = _lbfgs(prob, tol, steps, hook)

        def polish(big: torch.Tensor, ran: int) -> PBRFResult:
            z = h.z + torch.einsum("jr,kur->kju", psi, big.reshape(k, m, -1))
            res = relu_head_pbrf(
                h,
                prob.idx.tolist(),
                lam=prob.lam,
                loss=prob.loss,
                epsilon=prob.eps,
                max_rounds=max_rounds,
                start=z,
            )
            b = torch.stack([(a.T @ psi).reshape(-1) for a in res.a_mats])
            before = prob.rows(big)
            kept = prob.rows(b) <= before + prob.slack(before)
            ok = res.stable & res.convex & kept
            gn = torch.where(ok, res.grad_norm, torch.inf)
            why = tuple(
                ""
                if fine
                else f"kink state did not settle in {max_rounds} rounds"
                if not st
                else "a pinned kink is not convex"
                if not cv
                else "the polish ended above L-BFGS's objective"
                for fine, st, cv in zip(ok.tolist(), res.stable.tolist(), res.convex.tolist())
            )
            return PBRFResult(res.effects, gn, ran, tol, failures=why)

        final = polish(big, ran)
        if checkpoint is None:
            return final
        early = polish(*snap[0]) if snap else final
    return dataclasses.replace(final, early=early)
