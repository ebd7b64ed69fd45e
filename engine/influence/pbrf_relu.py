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
tried first (``Batch.run_block`` in ``engine.influence.pbrf_relu_rounds``, every point
of a cell in one batch: on a well-conditioned head they settle in a few rounds); a
point whose state has not settled in ``BLOCK_ROUNDS`` starts over from the warm start
with monotone rounds (``Batch.run``), where each round's solution is a candidate and F is the
merit: a point is kept only when F falls strictly
below the last kept one (the best of the steps 1, ½, …, 2⁻¹⁰ towards the candidate,
``Batch.descent``). A full step keeps the candidate and its state updates as above; a partial
one keeps a point inside the kinks, whose own sign pattern is the next state; where no
step falls, the next state is the kept point's own piece, on which F is a convex
quadratic, and if its candidate too finds no step, the round steps to the first pair
that reaches its kink on the way (F falls there; the classical primal active set) and
pins it. From a kept point that is its piece's minimiser after such a round, one pair
(the worst) changes, not all. F strictly falls from kept point to kept point and each
state's minimiser is unique, so no state's minimiser is kept twice: no cycle, and the
solution is never above the start (L-BFGS's iterate in ``polished_pbrf``).

The criterion (checked a posteriori, ``Batch.stationarity``): with every pinned pair's σ
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

from engine.device import torch_threads
from engine.influence.losses import pointwise_loss
from engine.influence.pbrf import PBRFResult, _lbfgs, _Problem
from engine.influence.pbrf_relu_rounds import Batch, Solve
from engine.influence.relu_head import ReluHead

BLOCK_ROUNDS = 50
"""Block rounds (``Batch.run_block``) before a point's solve falls back to the monotone
rounds (``Batch.run``)."""

BLOCK_PATIENCE: int | None = None
"""Block rounds without a new low in the count of changing pairs after which a point is
called oscillating and falls back to the monotone rounds at once (None: only after
``BLOCK_ROUNDS``). Not the default: 5 cut the oscillating test head's rounds from 254
to 111, but on MNIST 3 vs 8's 2L-ReLU (seed 0) it sent points the block rounds settle
to the monotone rounds, where 2 of 40 did not settle in 400 rounds (all 40 settled
at 50 block rounds; docs/benchmarks.md#influence-check-pbrf)."""

MAX_ROUNDS = 400
"""Rounds per point before the state is called unsettled (a cost cap: rounds are monotone
in F; on MNIST 3 vs 8 MLP-Attn seed 1 the points that settled took 3–278,
docs/benchmarks.md#influence-check-pbrf)."""


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
    monotone: torch.Tensor
    """[k] bool: the block rounds did not settle the point; the monotone ones ran."""


def relu_head_pbrf(
    h: ReluHead,
    indices: Sequence[int],
    *,
    lam: float,
    loss: str,
    epsilon: float | None = None,
    max_rounds: int = MAX_ROUNDS,
    start: torch.Tensor | None = None,
    block_rounds: int = BLOCK_ROUNDS,
    patience: int | None = BLOCK_PATIENCE,
) -> ReluPBRF:
    """The PBRF of removing each of ``indices`` (module docstring), by active set.

    The start is θ* (A = 0); or, given ``start`` [k, n, m] (each point's pre-activations
    at a warm start, e.g. L-BFGS's, ``polished_pbrf``), the A with z* + GA = start (least
    squares); the first state is the start's sign pattern, nothing pinned, and every kept
    point is below the start in F. The PBRF of a ReLU network is not convex: other starts
    can end at other (nearby) local minima, each meeting the criterion. All points are
    solved together (``engine.influence.pbrf_relu_rounds.Batch``); ``block_rounds`` and
    ``patience`` bound the block rounds (``BLOCK_ROUNDS``, ``BLOCK_PATIENCE``; 0 block
    rounds: the monotone ones alone).
    """
    n = h.z.shape[0]
    eps = 1.0 / n if epsilon is None else float(epsilon)
    base = pointwise_loss(h.out(h.zt), h.tt, loss)
    a0s = torch.zeros(len(indices), *h.z.shape, dtype=h.z.dtype)
    if start is not None:  # the start's A (z = z* + G A; least squares: G may be singular)
        dz = (start - h.z).permute(1, 0, 2).reshape(n, -1)
        sol0 = torch.linalg.lstsq(h.gram, dz, driver="gelsd").solution
        a0s = sol0.reshape(n, len(indices), -1).permute(1, 0, 2)
    idx = torch.as_tensor(list(indices), dtype=torch.long)
    batch = Batch(h, idx, lam, loss, eps)
    # its ops are small per point and batched over the points: one thread (a second one
    # spun, 3-10× the CPU under load, docs/benchmarks.md#influence-check-pbrf)
    with torch_threads(1):
        on0 = (h.z + h.gram @ a0s) > 0
        budget = min(block_rounds, max_rounds)  # max_rounds caps both kinds together
        if budget:
            sol = batch.run_block(on0, torch.zeros_like(on0), budget, patience)
        else:
            sol = Solve.empty(tuple(on0.shape), h.z.dtype)
        monotone = ~sol.stable & (sol.rounds < max_rounds)
        redo = monotone.nonzero().reshape(-1)
        if redo.numel():  # oscillating states: the monotone rounds, from the start
            left = max_rounds - sol.rounds[redo]
            mono = batch.run(on0[redo], torch.zeros_like(on0[redo]), left, a0s[redo], redo)
            mono.rounds += sol.rounds[redo]
            sol.put(redo, mono.a_mat, mono.pinned, mono.on, mono.sigma, mono.rounds, mono.stable)
        norm, convex = batch.stationarity(sol)
        zt = h.zt + h.cross @ sol.a_mat  # [k, t, m]
    effects = (pointwise_loss(h.out(zt), h.tt, loss) - base).T
    return ReluPBRF(
        effects,
        norm,
        convex,
        sol.stable,
        sol.rounds,
        sol.pinned.flatten(1).sum(1),
        list(sol.a_mat.unbind(0)),
        monotone,
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
