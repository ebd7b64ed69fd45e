"""The active-set rounds of ``engine.influence.pbrf_relu``, for all removed points of a
cell at once (docs/benchmarks.md#influence-check-pbrf).

Each removed point has its own state (on / off / pinned per (training point, unit)) and
its own number of pinned pairs; a round solves every still-iterating point's system
together: one batched LU of the systems padded to the largest pinned count (a padded
unknown is decoupled, its row and column the identity's), batched violation checks, and
per-point masks for the points still iterating. A batch of one is the per-point solve.
The rounds themselves (block, then monotone) are described in ``pbrf_relu``'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.func import grad, jacfwd, vmap

from engine.influence.losses import pointwise_loss
from engine.influence.relu_head import ReluHead

GROUP_GROWTH = 1.25
"""The largest system of a padded batch at most this times its smallest in size (LU cost
at most ≈ 2× the unpadded one)."""

SIGMA_SLACK = 1e-9
"""How far outside [0, 1] a kink multiplier may sit (round-off) and still count inside."""


@dataclass
class Solve:
    """B removed points' solves: their states and solutions."""

    a_mat: torch.Tensor  # A [B, n, m]
    pinned: torch.Tensor  # [B, n, m] bool
    on: torch.Tensor  # [B, n, m] bool (free pairs' side)
    sigma: torch.Tensor  # [B, n, m] the kink multipliers (0 off the pinned pairs)
    rounds: torch.Tensor  # [B] long
    stable: torch.Tensor  # [B] bool

    @classmethod
    def empty(cls, shape: tuple[int, ...], dtype: torch.dtype) -> Solve:
        b = shape[0]
        zb = torch.zeros(shape, dtype=torch.bool)
        return cls(
            torch.zeros(shape, dtype=dtype),
            zb,
            zb.clone(),
            torch.zeros(shape, dtype=dtype),
            torch.zeros(b, dtype=torch.long),
            torch.zeros(b, dtype=torch.bool),
        )

    def put(self, rows, a_mat, pinned, on, sigma, rounds, stable) -> None:
        """Record the points ``rows`` [b] (positions in the batch)."""
        self.a_mat[rows], self.pinned[rows], self.on[rows] = a_mat, pinned, on
        self.sigma[rows], self.rounds[rows], self.stable[rows] = sigma, rounds, stable


def _grads(loss: str):
    """(∇ℓ, ∇²ℓ) of the per-example loss in f, over rows: f, t [N, K] → [N, K], [N, K, K]
    (the squared error's in closed form: ℓ = ‖f − t‖², no autograd per call)."""
    if loss == "mse":

        def d2(f: torch.Tensor, _t: torch.Tensor) -> torch.Tensor:
            eye = torch.eye(f.shape[-1], dtype=f.dtype)
            return (2 * eye).expand(f.shape[0], -1, -1)

        return (lambda f, t: 2 * (f - t)), d2

    def one(f: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return pointwise_loss(f, t, loss)

    g = grad(one)
    return vmap(g), vmap(jacfwd(g))


def _solve(mat: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """mat⁻¹ rhs [b, N] by batched LU; least squares for a system the state made singular
    (a unit pinned on more points than the features' rank)."""
    sol, info = torch.linalg.solve_ex(mat, rhs)
    bad = (info != 0) | ~torch.isfinite(sol).all(1)
    if bool(bad.any()):
        sel = bad.nonzero().reshape(-1)
        sol[sel] = torch.linalg.lstsq(mat[sel], rhs[sel, :, None], driver="gelsd").solution[..., 0]
    return sol


def _one_pair(change, crossed, z, zscale, right, left, c) -> torch.Tensor:
    """[b, n, m] bool: per point, the worst of its changing pairs (violation measured in z
    for a free pair, in σ for a pinned one)."""
    badness = torch.where(
        crossed, z.abs() / zscale, -torch.minimum(right, left) / c.abs().clamp_min(1e-300)
    )
    worst = torch.where(change, badness, -1.0).flatten(1).argmax(1)
    one = torch.zeros_like(change)
    one.view(one.shape[0], -1)[torch.arange(one.shape[0]), worst] = True
    return one


class Batch:
    """The systems of the removed points ``idx`` [B] (``pbrf_relu``'s docstring); every
    method takes ``rows`` [b], the positions in the batch of the points it is given."""

    def __init__(self, h: ReluHead, idx: torch.Tensor, lam: float, loss: str, eps: float):
        self.h, self.idx, self.lam, self.eps, self.loss = h, idx, lam, eps, loss
        self.n, self.m = h.z.shape
        self.k = h.a.shape[1]
        self.rm = self.m**0.5
        self.d1, self.d2 = _grads(loss)
        # the squared error's w is linear in f: one Newton step from any w is exact
        self.iters = 1 if loss == "mse" else 30
        self.f0 = h.out(h.z)
        self.g0 = self.d1(self.f0, h.t)
        self.l0 = pointwise_loss(self.f0, h.t, loss)
        wt = torch.full((idx.numel(), self.n, 1), 1.0 / self.n, dtype=h.z.dtype)
        wt[torch.arange(idx.numel()), idx] -= eps  # each point's loss weight in the data
        self.wt = wt
        self.zscale = float(h.z.abs().median())

    def w_of(self, f: torch.Tensor, rows: torch.Tensor):
        """w = ∂(data)/∂f [b, n, K] at outputs f [b, n, K], and its Jacobian [b, n, K, K]."""
        b, n, k = f.shape
        t = self.h.t.expand(b, n, k).reshape(-1, k)
        g = self.d1(f.reshape(-1, k), t).reshape(b, n, k)
        w = (g - self.g0) / n
        ar, own = torch.arange(b), self.idx[rows]
        w[ar, own] -= self.eps * g[ar, own]
        return w, self.wt[rows, :, :, None] * self.d2(f.reshape(-1, k), t).reshape(b, n, k, k)

    @staticmethod
    def pins(pinned: torch.Tensor):
        """The pinned pairs per point, padded: (j, u, valid) [b, P]."""
        bb, jj, uu = pinned.nonzero(as_tuple=True)
        b = pinned.shape[0]
        counts = torch.bincount(bb, minlength=b)
        p = int(counts.max()) if bb.numel() else 0
        slot = torch.arange(bb.numel()) - (torch.cumsum(counts, 0) - counts)[bb]
        pj = torch.zeros(b, p, dtype=torch.long)
        pu = torch.zeros(b, p, dtype=torch.long)
        valid = torch.zeros(b, p, dtype=torch.bool)
        pj[bb, slot], pu[bb, slot], valid[bb, slot] = jj, uu, True
        return pj, pu, valid

    def a_of(self, w, mu, on, pins) -> torch.Tensor:
        """A [b, n, m] from w [b, n, K] and the pinned pairs' values μ [b, P]."""
        a_mat = -(on * (w @ self.h.a.T)) / (self.lam * self.rm)
        pj, pu, valid = pins
        bb = torch.arange(a_mat.shape[0])[:, None].expand_as(pj)
        a_mat[bb[valid], pj[valid], pu[valid]] = mu[valid]
        return a_mat

    def solve(self, on, pinned, w, rows) -> tuple[torch.Tensor, torch.Tensor]:
        """Newton on each fixed state's stationarity: (w [b, n, K], A [b, n, m]). The
        points are solved in groups of similar pinned counts (sorted; a group's largest
        system at most ``GROUP_GROWTH`` times its smallest in size), each group one
        padded batch: an oscillating state pins thousands of pairs, and padding every
        point's system to its size would cost its LU for all."""
        count = pinned.flatten(1).sum(1)
        order = torch.argsort(count, stable=True).tolist()
        sizes = (self.n * self.k + count).tolist()
        w_out, a_out = torch.empty_like(w), torch.empty(on.shape, dtype=w.dtype)
        start = 0
        while start < len(order):
            stop = start + 1
            while stop < len(order) and sizes[order[stop]] <= GROUP_GROWTH * sizes[order[start]]:
                stop += 1
            sel = torch.tensor(order[start:stop])
            ws, mu, pins = self._solve_padded(on[sel], pinned[sel], w[sel], rows[sel])
            w_out[sel], a_out[sel] = ws, self.a_of(ws, mu, on[sel], pins)
            start = stop
        return w_out, a_out

    def _solve_padded(self, on, pinned, w, rows):
        """``solve`` for one padded batch: (w [b, n, K], μ [b, P], pins)."""
        h, n, k, g, lam = self.h, self.n, self.k, self.h.gram, self.lam
        b, nk = on.shape[0], self.n * self.k
        onf = on.to(g.dtype)
        sa = onf[..., None] * h.a  # [b, n, m, K]: s_ju a_uk
        kf = torch.einsum("bjuk,bluv->bjklv", sa, sa) * g[None, :, None, :, None] / self.m
        kf = kf.reshape(b, nk, nk)
        pins = self.pins(pinned)
        pj, pu, valid = pins
        vf = valid.to(g.dtype)
        # f (flattened [n K]) = fc − kf w / λ + cfm μ;  z_P = z*_P + cmw w + cmm μ
        fc = torch.einsum("bju,uk->bjk", onf * h.z, h.a).reshape(b, nk) / self.rm
        on_p = torch.gather(onf, 2, pu[:, None, :].expand(b, n, -1))  # [b, n, P]
        g_p = g[:, pj].permute(1, 0, 2)  # [b, n, P] = G[j, pj]
        cfm = h.a[pu].permute(0, 2, 1)[:, None] * ((on_p * g_p) * vf[:, None])[:, :, None]
        cfm = cfm.reshape(b, nk, -1) / self.rm
        cmw = -cfm.transpose(1, 2) / lam
        same = (pu[:, :, None] == pu[:, None, :]) & valid[:, :, None] & valid[:, None, :]
        cmm = g[pj[:, :, None], pj[:, None, :]] * same + torch.diag_embed(1.0 - vf)
        zp = h.z[pj, pu] * vf
        mu = torch.zeros_like(zp)
        eye = torch.eye(nk, dtype=g.dtype)
        done = torch.zeros(b, dtype=torch.bool)
        for _ in range(self.iters):
            wf = w.reshape(b, nk)
            f = (fc - (kf @ wf[..., None])[..., 0] / lam + (cfm @ mu[..., None])[..., 0]).reshape(
                b, n, k
            )
            hw, hj = self.w_of(f, rows)
            if k == 1:
                hb = torch.diag_embed(hj.reshape(b, n))
            else:  # block diagonal [b, nK, nK]
                hb = torch.zeros(b, n, k, n, k, dtype=g.dtype)
                ar = torch.arange(n)
                hb[:, ar, :, ar, :] = hj.transpose(0, 1)
                hb = hb.reshape(b, nk, nk)
            res = (cmw @ wf[..., None] + cmm @ mu[..., None])[..., 0]
            r = torch.cat([wf - hw.reshape(b, nk), zp + res], 1)
            jac = torch.cat(
                [torch.cat([eye + hb @ kf / lam, -hb @ cfm], 2), torch.cat([cmw, cmm], 2)], 1
            )
            step = _solve(jac, -r) * ~done[:, None]
            w = w + step[:, :nk].reshape(b, n, k)
            mu = mu + step[:, nk:]
            big = torch.cat([w.reshape(b, -1), mu], 1).abs().amax(1)
            done |= step.abs().amax(1) <= 1e-13 * big
            if bool(done.all()):
                break
        return w, mu, pins

    def value(self, a_mat, ga, rows) -> torch.Tensor:
        """F_i [b] at A [b, n, m], ga = G A (‖B‖² = Σᵤ Aᵤᵀ G Aᵤ): the merit of ``run``."""
        prox = (a_mat * ga).sum((1, 2))
        return self.data(self.h.out(self.h.z + ga), rows) + 0.5 * self.lam * prox

    def data(self, f: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """F_i's data terms [b] at the outputs f [b, n, K] (``_Problem.rows``' closed form
        for the squared error): F_i = data + (λ/2)‖B‖²."""
        h = self.h
        if self.loss == "mse":
            d = ((f - self.f0) ** 2).sum(-1)
        else:
            d = pointwise_loss(f, h.t, self.loss) - self.l0 - ((f - self.f0) * self.g0).sum(-1)
        own = self.idx[rows]
        fi = f[torch.arange(f.shape[0]), own]
        return d.mean(1) - self.eps * pointwise_loss(fi, h.t[own], self.loss)

    def violations(self, w, a_mat, on, pinned, z):
        """The pairs the states (on, pinned) get wrong at their solutions (A, z [b, n, m]):
        (σ, c, crossed, up, down, right, left) with ``crossed`` the free pairs whose z
        changed sign, ``up``/``down`` the pinned ones that leave their kink to the on/off
        side, and right = c(1 − σ), left = cσ the objective's slopes leaving the kink to
        either side (both ≥ 0 at a minimum there; a pair leaves by the steeper descent)."""
        c = w @ self.h.a.T
        s = torch.where(pinned, -self.lam * self.rm * a_mat / torch.where(c == 0, 1.0, c), 0.0)
        crossed = ~pinned & (on != (z > 0)) & (z != 0)
        right, left = c * (1 - s), c * s
        tiny = SIGMA_SLACK * c.abs()
        up = pinned & (right < -tiny) & (right <= left)
        down = pinned & (left < -tiny) & (left < right)
        return s, c, crossed, up, down, right, left

    def run_block(self, on, pinned, max_rounds: int, patience: int | None = None) -> Solve:
        """The block rounds, tried first, for every point [B] from its state (on, pinned)
        [B, n, m]: every violated pair changes at once, until the state comes back (a
        cycle); from then on only the worst one per round. A point still unsettled after
        ``max_rounds`` (or, with ``patience``, whose count of changing pairs has not set a
        new low in that many rounds: an oscillation, ``pbrf_relu.BLOCK_PATIENCE``) leaves unsettled, its rounds counted,
        for ``run``."""
        big_b = on.shape[0]
        out = Solve.empty(tuple(on.shape), self.h.z.dtype)
        rows = torch.arange(big_b)
        w = torch.zeros(big_b, self.n, self.k, dtype=self.h.z.dtype)
        seen: list[set[bytes]] = [set() for _ in range(big_b)]
        single = torch.zeros(big_b, dtype=torch.bool)
        low = torch.full((big_b,), torch.iinfo(torch.long).max)  # fewest changes so far
        since = torch.zeros(big_b, dtype=torch.long)  # rounds since that low
        for rounds in range(1, max_rounds + 1):
            w, a_mat = self.solve(on, pinned, w, rows)
            z = self.h.z + self.h.gram @ a_mat
            s, c, crossed, up, down, right, left = self.violations(w, a_mat, on, pinned, z)
            change = crossed | up | down
            count = change.flatten(1).sum(1)
            settled = count == 0
            if bool(single.any()):
                one = _one_pair(change, crossed, z, self.zscale, right, left, c)
                one |= ~single[:, None, None]
                crossed, up, down = crossed & one, up & one, down & one
            keys = (pinned | crossed).numpy(), (on | up).numpy()
            for row in (~settled).nonzero().reshape(-1).tolist():
                key = keys[0][row].tobytes() + keys[1][row].tobytes()
                if key in seen[int(rows[row])]:  # a cycle: the state came back
                    single[row] = True
                seen[int(rows[row])].add(key)
            on = torch.where(settled[:, None, None], on, (on | up) & ~down & ~crossed)
            pinned = torch.where(settled[:, None, None], pinned, (pinned | crossed) & ~up & ~down)
            since = torch.where(count < low, 0, since + 1)
            low = torch.minimum(low, count)
            stop = settled | (rounds == max_rounds)
            if patience is not None:
                # the oscillation's signature: no new low in the count of changes
                stop |= since >= patience
            if bool(stop.any()):
                sel = stop.nonzero().reshape(-1)
                out.put(rows[sel], a_mat[sel], pinned[sel], on[sel], s[sel], rounds, settled[sel])
                keep = (~stop).nonzero().reshape(-1)
                rows, on, pinned, w = rows[keep], on[keep], pinned[keep], w[keep]
                single, low, since = single[keep], low[keep], since[keep]
                if not rows.numel():
                    break
        return out

    def run(self, on, pinned, max_rounds: torch.Tensor, a0: torch.Tensor, rows0) -> Solve:
        """The monotone rounds for the points ``rows0`` [b] from their states (on, pinned)
        and the points A0 [b, n, m] they were read from, at most ``max_rounds`` [b] each,
        every kept point strictly below the last in F (``pbrf_relu``'s docstring)."""
        h, g = self.h, self.h.gram
        b = on.shape[0]
        out = Solve.empty(tuple(on.shape), h.z.dtype)
        pos = torch.arange(b)  # positions in this call's output
        rows = rows0.clone()
        w = torch.zeros(b, self.n, self.k, dtype=h.z.dtype)
        kept = a0.clone()
        kga = g @ kept
        fk = self.value(kept, kga, rows)
        kp = pinned.clone()  # the pairs at their kink at the kept point (z = 0 to round-off)
        own = torch.zeros(b, dtype=torch.bool)  # the state is the kept point's own piece
        s = torch.zeros_like(kept)
        limit = max_rounds.clone()
        for rounds in range(1, int(limit.max()) + 1):
            w, a_mat = self.solve(on, pinned, w, rows)
            ga = g @ a_mat
            z0, z1 = h.z + kga, h.z + ga
            t = self.descent(kept, kga, a_mat, ga, fk, rows)
            climb = (t == 0) & own
            if bool(climb.any()):
                # no halving lowered F (the candidate lies beyond kinks F climbs over): F
                # is this piece's convex quadratic up to the first pair that reaches its
                # kink, and falls there (strictly, unless the kept point minimises the
                # piece); stop there and pin that pair
                leave = ~pinned & (on != (z1 > 0)) & (z1 != 0)
                # (≥ 0: a pair at its kink to round-off stops the step there)
                tt = torch.where(leave, (z0 / (z0 - z1)).clamp_min(0), torch.inf)
                tc = tt.flatten(1).amin(1).clamp_max(1.0)
                hit = leave & (tt <= tc[:, None, None]) & climb[:, None, None]
                # a pinned pair carries on = False (``solve`` counts it through μ)
                pinned, on = pinned | hit, on & ~hit
                kp = torch.where(climb[:, None, None], pinned, kp)
                t = torch.where(climb, tc, t)
            zero, part, full = t == 0, (t > 0) & (t < 1), t >= 1
            if bool(zero.any()):
                # the block round climbed at every step length (F is not convex across
                # kinks: pairs changed together can undo each other, and the state then
                # oscillates without repeating): back to the kept point's own piece
                zm = zero[:, None, None]
                pinned, on = torch.where(zm, kp, pinned), torch.where(zm, (z0 > 0) & ~kp, on)
            if bool(part.any()):
                pm, tp = part[:, None, None], t[:, None, None]
                kept = torch.where(pm, kept + tp * (a_mat - kept), kept)
                kga = torch.where(pm, kga + tp * (ga - kga), kga)
                fk = torch.where(part, self.value(kept, kga, rows), fk)
                # at zero at both ends: still pinned; every other pair has its sign
                kp = torch.where(pm, kp & pinned, kp)
                pinned = torch.where(pm, kp, pinned)
                on = torch.where(pm, ((h.z + kga) > 0) & ~kp, on)
            own |= zero | part
            stop = torch.zeros_like(own)
            settled = torch.zeros_like(own)
            if bool(full.any()):
                fm = full[:, None, None]
                kept, kga = torch.where(fm, a_mat, kept), torch.where(fm, ga, kga)
                fk = torch.where(full, self.value(a_mat, ga, rows), fk)
                kp = torch.where(fm, pinned, kp)  # the state's minimiser
                sv, c, crossed, up, down, right, left = self.violations(w, a_mat, on, pinned, z1)
                s = torch.where(fm, sv, s)
                change = crossed | up | down
                settled = full & ~change.flatten(1).any(1)
                if bool(settled.any()):
                    sel = settled.nonzero().reshape(-1)
                    out.put(pos[sel], a_mat[sel], pinned[sel], on[sel], s[sel], rounds, True)
                    stop |= settled
                # a block round climbed since the last kept minimiser: one pair, the worst
                one = _one_pair(change, crossed, z1, self.zscale, right, left, c)
                one |= ~own[:, None, None]
                crossed, up, down = crossed & one, up & one, down & one
                nxt = full & ~settled
                nm = nxt[:, None, None]
                on = torch.where(nm, (on | up) & ~down & ~crossed, on)
                pinned = torch.where(nm, (pinned | crossed) & ~up & ~down, pinned)
                own &= ~nxt
            cap = (rounds >= limit) & ~stop
            if bool(cap.any()):
                sel = cap.nonzero().reshape(-1)
                out.put(pos[sel], kept[sel], pinned[sel], on[sel], s[sel], rounds, False)
                stop |= cap
            if bool(stop.any()):
                keep = (~stop).nonzero().reshape(-1)
                pos, rows, on, pinned, w = pos[keep], rows[keep], on[keep], pinned[keep], w[keep]
                kept, kga, fk, kp, own = kept[keep], kga[keep], fk[keep], kp[keep], own[keep]
                s, limit = s[keep], limit[keep]
                if not pos.numel():
                    break
        return out

    def descent(self, a0, ga0, a1, ga1, f0, rows, halvings: int = 10) -> torch.Tensor:
        """Per point, the step t [b] in {1, ½, …, 2⁻ʰᵃˡᵛⁱⁿᵍˢ} from A0 towards A1 [b, n, m]
        (ga0, ga1 = G A0, G A1) with the lowest F, if that is strictly below f0 [b]; else 0.
        On the segment z is linear in t and ‖B‖² quadratic: no product with G per trial."""
        h = self.h
        da, gd = a1 - a0, ga1 - ga0
        q0 = (a0 * ga0).sum((1, 2))
        q1, q2 = 2 * (a0 * gd).sum((1, 2)), (da * gd).sum((1, 2))
        z0 = h.z + ga0
        t, t_best, best = 1.0, torch.zeros_like(f0), f0
        for _ in range(halvings + 1):
            val = self.data(h.out(z0 + t * gd), rows) + 0.5 * self.lam * (q0 + t * q1 + t * t * q2)
            better = val < best
            best, t_best = torch.where(better, val, best), torch.where(better, t, t_best)
            t /= 2
        return t_best

    def stationarity(self, sol: Solve) -> tuple[torch.Tensor, torch.Tensor]:
        """(‖generalised gradient‖ / ‖∇F_i(θ*)‖ [B], every pinned kink convex [B]) at the
        solutions, recomputed from A alone (``pbrf_relu``'s docstring)."""
        h, a_mat, pinned = self.h, sol.a_mat, sol.pinned
        rows = torch.arange(a_mat.shape[0])
        z = h.z + h.gram @ a_mat
        w, _ = self.w_of(h.out(z), rows)
        c = w @ h.a.T
        act = torch.where(pinned, sol.sigma.clamp(0, 1), (z > 0).to(z.dtype))
        gen = act * c / self.rm + self.lam * a_mat
        w0, _ = self.w_of(self.f0.expand(len(rows), -1, -1), rows)
        r0 = (h.z > 0) * (w0 @ h.a.T) / self.rm
        norm = (gen * (h.gram @ gen)).sum((1, 2)).clamp_min(0).sqrt()
        norm0 = (r0 * (h.gram @ r0)).sum((1, 2)).clamp_min(0).sqrt()
        convex = ((c > 0) | ~pinned).flatten(1).all(1)
        return norm / norm0.clamp_min(torch.finfo(z.dtype).tiny), convex
