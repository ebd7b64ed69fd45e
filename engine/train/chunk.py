"""The stacked state of one chunk of same-shaped networks and its epochs (``Chunk``).

``engine.train.batched.train_batched`` cuts the networks into chunks and runs each chunk
here: the trainable parameters stacked as [B, ...] tensors, the per-network state (batch
order generator, excluded point, features, frozen tensors, optimiser moments, stop,
divergence, perturbation) and the step: the closed-form one of ``engine.train.fused``
or, under ``train.engine = "autograd"``, a vmapped ``functional_call`` (the fast path over
``model.head`` on fixed features, or the whole module). A network that stops is written
back into its module and dropped from the stack while the others go on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from engine.errors import Cancelled, ConfigError, DivergedError
from engine.models import closed_form
from engine.train import fused
from engine.train.adversarial import perturb_stacked, stacked_recipe
from engine.train.base import (
    DIVERGE_FACTOR,
    BatchTick,
    EpochStats,
    Perturb,
    TrainSpec,
    data_loss,
    divergence_hint,
    make_optimizer,
)

StopRule = Callable[[int, Sequence[float]], bool]
"""(network index, its epoch-mean losses so far [E]) → True when that network stops here."""


@dataclass(frozen=True)
class BatchedEpoch:
    """One finished epoch of one chunk: ``stats[k]`` is network ``networks[k]``'s epoch
    (the same ``EpochStats`` its separate run yields); ``stopped``: those of them that
    stopped after it (their models now hold their final weights)."""

    epoch: int
    networks: tuple[int, ...]
    stats: tuple[EpochStats, ...]
    stopped: tuple[int, ...] = ()
    diverged: dict[int, str] = field(default_factory=dict)
    tick: BatchTick | None = None
    """Set (``stats`` empty): the epoch is still running, ``tick`` its steps so far (the
    chunk's first network's loss and accuracy): ``train_batched(..., tick=…)`` only."""


def _features(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The fixed features of a ``fixed_features`` model (the vmap fast path reads them)."""
    return m.features(x)  # type: ignore[operator,no-any-return]


class Chunk:
    """The stacked state of one chunk of networks and its epochs: ``run`` yields a
    ``BatchedEpoch`` per epoch (``train_batched``'s arguments, one chunk's share)."""

    def __init__(
        self,
        nets: list[nn.Module],
        x: torch.Tensor,
        y: torch.Tensor,
        cfg: TrainSpec,
        bs: int,
        gens: list[torch.Generator],
        excl: list[int | None],
        offset: int,
        perturbs: list[Perturb] | None = None,
    ) -> None:
        self.nets, self.x, self.y, self.cfg, self.bs, self.gens = nets, x, y, cfg, bs, gens
        self.per = y.dim() == 2  # x [B, n, ...], y [B, n]: network b reads x[b], y[b]
        self.ids = list(range(offset, offset + len(nets)))
        m0 = nets[0]
        trainable = {id(p) for p in m0.parameters() if p.requires_grad}
        head = getattr(m0, "head", m0)
        fast = bool(getattr(m0, "fixed_features", False)) and isinstance(head, nn.Module)
        if fast and {id(p) for p in head.parameters() if p.requires_grad} != trainable:
            fast = False  # a trainable parameter outside the head: run the whole module
        self.fast = fast
        # the state functional_call replaces: trainable parameters (stacked, updated) and
        # the buffers / frozen parameters that differ between networks (stacked); the
        # rest is read from the first module. Fast path: only the head's (``features`` ran
        # already; ``forward_features`` reads the head alone).
        scope = head if fast else m0
        prefix = _prefix(m0, scope) if fast else ""
        self.names = [k for k, p in scope.named_parameters() if p.requires_grad]
        # each network's own head (2L-ReLU's is the model, MLP-Attn's its ``mlp``: the
        # fused step stacks both kinds, ``batched.stackable``)
        self.prefixes = [_prefix(m, m.head) if fast else "" for m in nets]  # type: ignore[arg-type]
        scopes = [getattr_path(m, q) for m, q in zip(nets, self.prefixes)] if fast else nets
        states = [dict(s.named_parameters()) | dict(s.named_buffers()) for s in scopes]
        self.params = {k: torch.stack([s[k].detach() for s in states]).clone() for k in self.names}
        self.module: nn.Module = _Features(m0) if fast else m0
        self.key = "net." + prefix if fast else ""
        fp = fused.plan(m0) if fused.engine_of(cfg) == "fused" else None
        self.fp = fp
        self.perturbs = perturbs  # adversarial training: each network's, every step
        self.maps: tuple[closed_form.FeatureMap, ...] | None = None  # ``_head``'s, once
        if perturbs is not None and fp is None:
            raise ConfigError("engine", "autograd", "fused for a stacked adversarial step")
        features: Callable[[nn.Module, torch.Tensor], torch.Tensor] | None = None
        if fp is not None:
            # the closed-form step (``engine.train.fused``): it reads the frozen tensors of
            # its plan (stacked in ``fixed``, dropped with a network that stops) and each
            # network's features (a twin's too), computed once below
            if torch.is_floating_point(y) and fp.n_out != 1:  # as ``base.data_loss``
                raise ConfigError("targets", "float", "integer labels for a multi-output model")
            frozen = [fp.frozen(m) for m in nets]
            self.fixed = {k: torch.stack([f[k] for f in frozen]) for k in frozen[0]}
            features = fp.features
        else:
            self.fixed = {}
            for k, v in states[0].items():
                if k in self.params or v is None:
                    continue
                if any(not torch.equal(s[k], v) for s in states[1:]):
                    self.fixed[k] = torch.stack([s[k].detach() for s in states])
            if fast:
                features = _features
        if features is not None:
            with torch.no_grad():
                feats = [features(m, x[b] if self.per else x).detach() for b, m in enumerate(nets)]
            same = all(torch.equal(f, feats[0]) for f in feats[1:])
            self.feats, self.shared = (feats[0], True) if same else (torch.stack(feats), False)
        else:
            self.feats, self.shared = x, not self.per
        # a linearized twin's pattern input z₀ = x̃W₀ᵀ is fixed per point: computed once for
        # all n points [B, n, m] and gathered a step, not recomputed (one of the step's
        # three [b, d] × [d, m] products); not under a perturbation (its x̃ changes)
        self.z0: torch.Tensor | None = None
        if fp is not None and fp.linear and perturbs is None:
            with torch.no_grad():
                feats_b = self.feats.expand(len(nets), -1, -1) if self.shared else self.feats
                self.z0 = torch.bmm(feats_b, self.fixed["w0"].transpose(1, 2))
        self.excl = torch.tensor([-1 if e is None else e for e in excl], device=x.device)
        self.none_out = all(e is None for e in excl)  # no point excluded: no weights a step
        self.opt = make_optimizer(list(self.params.values()), cfg)
        # the fused step calls the optimiser's kernel directly, bound once (``fused.stepper``)
        self.step = fused.stepper(self.opt, list(self.params.values())) if fp else None
        self.grad_fn = self._grad_fn() if fp is None else fused.grad_fn(fp)

    def _grad_fn(self) -> Callable[..., Any]:
        from torch.func import functional_call, grad_and_value, vmap

        module, key = self.module, self.key

        def loss(p: dict[str, torch.Tensor], f: dict[str, torch.Tensor], xb, yb, wb):  # type: ignore[no-untyped-def]
            state = {key + k: v for k, v in p.items()} | {key + k: v for k, v in f.items()}
            out = functional_call(module, state, (xb,))
            # the separate loop's objective: mean over the batch, the excluded point's
            # term weighted zero (the batch keeps its 1/|batch|)
            return (data_loss(out, yb, reduction="none") * wb).sum() / wb.numel(), out

        return vmap(grad_and_value(loss, has_aux=True))  # type: ignore[no-any-return]

    def run(
        self,
        stop: StopRule | None,
        should_stop: Callable[[], bool] | None,
        raise_div: bool,
        sync: Callable[[int, int], bool] | None,
        tick: float | None = None,
    ) -> Iterator[BatchedEpoch]:
        cfg, n, bs, x = self.cfg, self.y.shape[-1], self.bs, self.x
        t0 = last = time.perf_counter()
        losses: list[list[float]] = [[] for _ in self.ids]
        start: list[float | None] = [None] * len(self.ids)
        hints = [divergence_hint(m, cfg) for m in self.nets]  # what a divergence message advises
        for m in self.nets:
            m.train()
        for epoch in range(1, cfg.epochs + 1):
            B = len(self.ids)
            order = torch.stack([torch.randperm(n, generator=g) for g in self.gens]).to(x.device)
            total, correct, seen = [0.0] * B, [0.0] * B, [0] * B
            bad: dict[int, str] = {}
            rows = torch.arange(B, device=x.device)[:, None]
            steps: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
            widths: list[int] = []
            for lo in range(0, n, bs):
                if should_stop is not None and should_stop():
                    raise Cancelled(f"stopped during epoch {epoch}")
                idx = order[:, lo : lo + bs]  # [B, b]
                yb = self.y[rows, idx] if self.per else self.y[idx]
                if self.perturbs is not None:
                    xb = self._adversarial(idx, rows, yb)
                else:
                    xb = self.feats[idx] if self.shared else self.feats[rows, idx]
                keep = None if self.none_out else idx != self.excl[:, None]
                # the fused step reads None as every weight 1 (``fused._loss_grad``)
                wb = keep.to(xb.dtype) if keep is not None else None if self.fp else _ones(xb)
                fixed = self.fixed
                if self.z0 is not None:
                    fixed = fixed | {"z0": self.z0[rows, idx]}
                grads, (lv_t, out) = self.grad_fn(self.params, fixed, xb, yb, wb)
                self._update(grads)
                with torch.no_grad():
                    if torch.is_floating_point(yb):
                        hit = torch.sign(out[..., 0]) == torch.sign(yb)
                    else:
                        hit = out.argmax(-1) == yb
                    # read once an epoch (one sync instead of three a step)
                    if keep is None:
                        cnt = idx.new_full((idx.shape[0],), idx.shape[1])
                        steps.append((lv_t.detach(), cnt, hit.sum(1)))
                    else:
                        steps.append((lv_t.detach(), keep.sum(1), (hit & keep).sum(1)))
                widths.append(idx.shape[1])
                if tick is not None and lo + bs < n and time.perf_counter() - last >= tick:
                    last = time.perf_counter()  # a long epoch (adversarial): its steps so far
                    yield self._tick(epoch, steps, widths, n, last - t0)
            lv_all, cnt_all, hit_all = (torch.stack(t).tolist() for t in zip(*steps))
            for width, lvs, cnt, hits in zip(widths, lv_all, cnt_all, hit_all):
                for b, raw in enumerate(lvs):
                    c = int(cnt[b])
                    lv = raw * (width / c if c else 0.0) if c != width else raw
                    if not math.isfinite(lv) and b not in bad:
                        bad[b] = f"training diverged at epoch {epoch} (loss={lv}); {hints[b]}"
                    if start[b] is None:
                        start[b] = lv
                    if c:
                        total[b] += lv * c
                        correct[b] += (hits[b] / c) * c
                        seen[b] += c
            stats, stopped = [], []
            elapsed = time.perf_counter() - t0
            for b in range(B):
                mean = total[b] / max(seen[b], 1)
                limit = DIVERGE_FACTOR * max(start[b] or 0.0, 1.0)
                if b not in bad and mean > limit:
                    bad[b] = (
                        f"training diverged at epoch {epoch} (loss {mean:.3g}, over "
                        f"{DIVERGE_FACTOR:g}× its start {start[b]:.3g}); {hints[b]}"
                    )
                stats.append(EpochStats(epoch, mean, correct[b] / seen[b], elapsed))
                losses[b].append(mean)
                if (
                    b in bad
                    or epoch >= cfg.epochs
                    or (stop is not None and stop(self.ids[b], losses[b]))
                ):
                    stopped.append(b)
            if bad and raise_div:
                b = min(bad)
                raise DivergedError(f"network {self.ids[b]}: {bad[b]}")
            ev = BatchedEpoch(
                epoch,
                tuple(self.ids),
                tuple(stats),
                tuple(self.ids[b] for b in stopped),
                {self.ids[b]: msg for b, msg in bad.items()},
            )
            if sync is not None:
                for b in range(B):
                    if b not in stopped and sync(self.ids[b], epoch):
                        self._write_back(b)
            if stopped:
                self._retire(stopped)
                keep_b = [b for b in range(B) if b not in set(stopped)]
                losses = [losses[b] for b in keep_b]
                hints = [hints[b] for b in keep_b]
                start = [start[b] for b in keep_b]
            yield ev
            if not self.ids:
                return

    def _tick(
        self,
        epoch: int,
        steps: Sequence[tuple[torch.Tensor, ...]],
        widths: list[int],
        n: int,
        t: float,
    ) -> BatchedEpoch:
        """The epoch so far (its first ``len(steps)`` steps) as a ``BatchedEpoch.tick``."""
        lv, cnt, hit = (torch.stack([s[k][0] for s in steps]) for k in range(3))
        seen = max(float(cnt.sum()), 1.0)
        loss = float((lv * torch.tensor(widths, dtype=lv.dtype, device=lv.device)).sum())
        done = len(steps)
        st = BatchTick(
            epoch,
            loss / max(sum(widths), 1),
            float(hit.sum()) / seen,
            t,
            batch=done,
            batches=-(-n // self.bs),
        )
        return BatchedEpoch(epoch, tuple(self.ids), (), tick=st)

    def _adversarial(self, idx: torch.Tensor, rows: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        """The features [B, b, d'] of each network's perturbed mini-batch (``perturbs``).
        Closed-form PGD of one recipe runs stacked on the chunk's own weights and takes
        the features of every network at once (``closed_form.InputGrad.features``: what
        each model's ``features`` computes); any other perturbation runs per network, each
        model holding its current weights."""
        assert self.perturbs is not None and self.fp is not None
        raw = self.x[rows, idx] if self.per else self.x[idx]  # [B, b, d]
        head = self._head()
        if head is not None:
            xa = perturb_stacked(self.perturbs, self.nets, raw, yb, head)
            assert xa is not None
            with torch.no_grad():
                return closed_form.InputGrad(head).features(xa)[0]
        out = []
        for b, (net, perturb) in enumerate(zip(self.nets, self.perturbs)):
            self._write_back(b)
            x_adv = perturb(net, raw[b], yb[b]).detach()
            with torch.no_grad():
                out.append(self.fp.features(net, x_adv))
        return torch.stack(out)

    def _head(self) -> closed_form.StackedHead | None:
        """The chunk's networks as a ``closed_form.StackedHead`` on its own stacked weights
        (views: the optimiser's in-place updates show; the feature maps taken once per
        set of networks), or None when their perturbations do not run stacked."""
        assert self.perturbs is not None and self.fp is not None
        if self.maps is None:
            net = closed_form.stack(self.nets) if stacked_recipe(self.perturbs) else None
            if net is None or self.fp.linear:
                self.maps = ()
            else:
                self.maps = net.maps
        if not self.maps:
            return None
        roles = {r: k for k, r in self.fp.roles.items()}
        a = self.params[roles["a"]] if "a" in roles else self.fixed["a"]
        return closed_form.StackedHead(self.params[roles["w"]], a, self.maps)

    @torch.no_grad()
    def _update(self, grads: dict[str, torch.Tensor]) -> None:
        """One optimiser step on every stacked parameter. Adam and SGD are element-wise and
        every network of a chunk has taken the same number of steps, so torch's own
        optimiser (``base.make_optimizer``: fused Adam where there is one, coupled weight
        decay) over the [B, ...] tensors is, element by element, the update each network's
        separate optimiser makes (the fused step calls its kernel directly: ``fused.stepper``)."""
        if self.step is not None:
            self.step([grads[k] for k in self.params])
            return
        for k, p in self.params.items():
            p.grad = grads[k]
        self.opt.step()
        for p in self.params.values():
            p.grad = None

    @torch.no_grad()
    def _write_back(self, b: int) -> None:
        """Copy network b's stacked weights into its own module."""
        scope = getattr_path(self.nets[b], self.prefixes[b]) if self.fast else self.nets[b]
        own = dict(scope.named_parameters())
        for k in self.names:
            own[k].copy_(self.params[k][b])

    @torch.no_grad()
    def _retire(self, stopped: list[int]) -> None:
        """Write the stopped networks' weights back and drop them from the stack."""
        for b in stopped:
            self._write_back(b)
            self.nets[b].eval()
        keep = [b for b in range(len(self.ids)) if b not in set(stopped)]
        if not keep:
            self.ids = []
            return
        sel = torch.tensor(keep, device=self.x.device)

        def pick(d: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
            return {k: v.index_select(0, sel) for k, v in d.items()}

        old = self.params
        self.params, self.fixed = pick(self.params), pick(self.fixed)
        states = [self.opt.state.get(p, {}) for p in old.values()]
        self.opt = make_optimizer(list(self.params.values()), self.cfg)
        for p, st in zip(self.params.values(), states):  # the moments of those that go on
            if st:
                self.opt.state[p] = {
                    k: v.index_select(0, sel) if k.startswith("exp_avg") else v
                    for k, v in st.items()
                }
        if self.step is not None:  # bound to the new optimiser and its carried state
            self.step = fused.stepper(self.opt, list(self.params.values()))
        if not self.shared:
            self.feats = self.feats.index_select(0, sel)
        if self.z0 is not None:
            self.z0 = self.z0.index_select(0, sel)
        if self.per:
            self.y = self.y.index_select(0, sel)
            if self.perturbs is not None:  # ``_adversarial`` reads the raw rows x[b]
                self.x = self.x.index_select(0, sel)
        self.excl = self.excl.index_select(0, sel)
        self.nets = [self.nets[b] for b in keep]
        self.prefixes = [self.prefixes[b] for b in keep]
        if self.perturbs is not None:
            self.perturbs = [self.perturbs[b] for b in keep]
            self.maps = None  # ``_head`` stacks the feature maps of those left
        self.gens = [self.gens[b] for b in keep]
        self.ids = [self.ids[b] for b in keep]


def _ones(x: torch.Tensor) -> torch.Tensor:
    """Weights [B, b] of 1 for the mini-batch x [B, b, ...] (no point excluded)."""
    return x.new_ones(x.shape[:2])


class _Features(nn.Module):
    """A module whose forward is ``net.forward_features`` (the fast path's call)."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        return self.net.forward_features(feats)  # type: ignore[operator,no-any-return]


def _prefix(model: nn.Module, sub: nn.Module) -> str:
    """The dotted name of submodule ``sub`` in ``model`` ('' for the model itself), with a
    trailing dot."""
    for name, mod in model.named_modules():
        if mod is sub:
            return name + "." if name else ""
    raise ConfigError("head", type(sub).__name__, "a submodule of the model")


def getattr_path(model: nn.Module, prefix: str) -> nn.Module:
    """The submodule at dotted ``prefix`` ('a.b.' or '')."""
    mod = model
    for part in prefix.strip(".").split("."):
        if part:
            mod = getattr(mod, part)
    return mod
