"""The run's trainer: every network an experiment trains goes through here.

``Trainer`` owns, for one ``RunContext``: building a model as the run builds it
(``new_model``), the cache of trained networks (one per data set, kind, width, seed,
adversarial flag, d_k), the plan of which cells train together (``plan_batches``:
the seeds of a (kind, width) stacked in one ``engine.train.batched`` call, with the fused
step of ``engine.train.fused`` where the model has one, else where ``worth_batching``
says so; on the fused step the seeds of 2L-ReLU and MLP-Attn of one width share one
stack, ``stack_kinds``), the events those cells stream (the first network's live, the
others' replayed in their own cells), the kernel-drift probes, and, through ``engine.run.twins``, the
linearized twins (the drift probes themselves: ``engine.run.drift``). The context keeps the spec, device, data, resume state, cancel flag
and notes, and hands its ``train_model``, ``train_linearized``, ``new_model``,
``plan_batches`` and ``planned`` through to this class (docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from engine.data.dataset import Dataset
from engine.errors import DivergedError
from engine.run.drift import drift, drift_probe
from engine.run.events import Event, Metric, Progress
from engine.run.trained import RunState, TrainedModel, _Job, batch_seed
from engine.run.twins import TwinTrainer

if TYPE_CHECKING:
    from engine.train.chunk import Perturb

TICK_SECONDS = 2.0
"""The longest a training epoch runs without a progress event: a longer one (adversarial
training attacks every batch) reports its steps (``Progress('batch')``) this often."""


def train_group(kind: str, width: int, adversarial: bool = False) -> tuple[Any, ...]:
    """The ``Cell.batch`` group of the networks of ``kind`` at ``width`` that may train
    stacked (``Trainer.plan_batches``): adversarially trained ones apart from standard ones."""
    return (kind, width, "adversarial") if adversarial else (kind, width)


class Trainer:
    """The training half of a ``RunContext`` (``ctx``): models, their cache, plans, twins."""

    def __init__(self, ctx: RunState) -> None:
        self.ctx = ctx
        self._trained: dict[tuple[Any, ...], TrainedModel] = {}
        self._groups: dict[Any, list[Any]] = {}
        self._pending: dict[tuple[Any, ...], tuple[list[Event], str | None]] = {}
        self.twins = TwinTrainer(self)

    def train_linearized(self, tm: TrainedModel) -> Generator[Event, None, nn.Module]:
        """``TwinTrainer.train`` (the linearized twin of ``tm``); ``yield from`` it."""
        return (yield from self.twins.train(tm))

    def new_model(
        self,
        kind: str,
        width: int,
        seed: int,
        ds: Dataset,
        *,
        context: torch.Tensor | None = None,
        d_k: int | None = None,
    ) -> nn.Module:
        """``kind`` at ``width``, initialised for ``seed``, on the run's device and dtype, as
        ``train_model`` builds it; ``context``: the attention's context rows (default
        ``context_rows(ds)``). The init of the weights depends on the seed alone."""
        from engine.models import build_model

        sp = self.ctx.spec
        rows = self.ctx.context_rows(ds) if context is None else context
        shift = None if ds.pixel_mean is None else ds.pixel_mean.to(self.ctx.device)
        return build_model(
            kind,
            rows,
            width,
            ds.n_out,
            sigma_w=sp.model.sigma_w,
            train_output=sp.model.train_output,
            seed=seed,
            dtype=self.ctx.dtype,
            d_k=d_k,
            init_std=sp.qkv.init_std or None,
            input_shift=shift,
        ).to(self.ctx.device)

    def plan_batches(self, batches: Iterable[tuple[Any, Any]]) -> None:
        """The (group, member) pairs of the cells about to run in this process
        (``Cell.batch``; ``run_cells`` passes them): ``planned(group)`` lists a group's
        members in plan order. ``train_model`` reads the groups (kind, width), members
        the seeds: with ``train.batch_networks`` > 1, the first call of a (kind, width)
        trains every planned seed of it not yet trained in one ``train_batched`` call
        (on the fused step with the planned seeds of the other closed-form kind of that
        width, ``stack_kinds``), and each later network's call replays its own events
        and returns its model.
        Replaces the previous plan."""
        groups: dict[Any, list[Any]] = {}
        for group, member in batches:
            members = groups.setdefault(group, [])
            if member not in members:
                members.append(member)
        self._groups = groups

    def planned(self, group: Any) -> list[Any]:
        """The members of ``group`` planned in this process (``plan_batches``), or []
        (a Ray task, a run without a plan)."""
        return list(self._groups.get(group, []))

    def train_model(
        self,
        kind: str,
        width: int,
        seed: int,
        *,
        dataset: Dataset | None = None,
        adversarial: bool = False,
        d_k: int | None = None,
    ) -> Generator[Event, None, TrainedModel]:
        """Train (or reuse) ``kind`` at ``width`` for ``seed``; ``yield from`` it.

        ``d_k`` (QKV-Attn only) overrides ``spec.qkv.d_k`` (the d_k sweep).
        Yields per-epoch ``Metric`` (train_loss, train_accuracy, kernel_drift) and
        ``Progress('cell')`` events; returns the ``TrainedModel``. Seeds planned together
        (``plan_batches``; on the fused step 2L-ReLU's and MLP-Attn's of one width
        together, ``stack_kinds``) train side by side in ``engine.train.batched`` where its
        ``worth_batching`` says so (always for the fused step; autograd: never on a CPU,
        measured no faster there), each exactly
        as alone (own init, batch order, stop, drift probe, divergence); adversarial
        training (its PGD step perturbs each network's own batches), a d_k override and a
        data set passed in train one network at a time.
        """
        ds = dataset if dataset is not None else self.ctx.dataset(seed=seed)
        dk = (d_k if d_k is not None else self.ctx.spec.qkv.d_k or None) if kind == "qkv" else None
        key = self._model_key(ds, kind, width, seed, adversarial, dk)
        if key in self._pending:  # trained with other seeds: this cell's events now
            events, error = self._pending.pop(key)
            yield from events
            if error is not None:
                raise DivergedError(error)
        if key in self._trained:
            return self._trained[key]
        together = [(kind, seed)]
        if dataset is None and d_k is None and self.ctx.spec.train.batch_networks > 1:
            for k2 in self.stack_kinds(kind):
                for s in self.planned(train_group(k2, width, adversarial)):
                    k = self._model_key(self.ctx.dataset(seed=s), k2, width, s, adversarial, dk)
                    if (
                        (k2, s) != (kind, seed)
                        and k not in self._trained
                        and k not in self._pending
                    ):
                        together.append((k2, s))
        if len(together) > 1:
            return (yield from self._train_together(width, together, dk, adversarial))
        job = self._job(kind, width, seed, ds, adversarial, dk, d_k is not None)
        yield from self._train_one(job)
        return self._finish(job, time.perf_counter() - job.t0)

    def stack_kinds(self, kind: str) -> tuple[str, ...]:
        """The kinds whose planned networks of one width may share ``kind``'s stack,
        ``kind`` first: on the fused step both closed-form kinds (2L-ReLU and MLP-Attn are
        one head on fixed features, each network through its own feature map:
        ``engine.train.batched.stackable``; docs/benchmarks-training.md#kinds-stacked);
        else ``kind`` alone."""
        from engine.kinds import FUSED_KINDS
        from engine.train import fused

        if kind not in FUSED_KINDS or fused.engine_of(self.ctx.spec.train) != "fused":
            return (kind,)
        return (kind, *(k for k in FUSED_KINDS if k != kind))

    @staticmethod
    def _model_key(
        ds: Dataset, kind: str, width: int, seed: int, adversarial: bool, dk: int | None
    ) -> tuple[Any, ...]:
        return (ds.name, ds.classes, ds.n_train, ds.n_test, kind, width, seed, adversarial, dk)

    def _job(
        self,
        kind: str,
        width: int,
        seed: int,
        ds: Dataset,
        adversarial: bool,
        dk: int | None,
        dk_cell: bool = False,
    ) -> _Job:
        """One network about to train: its model at init, data, drift probe, stop rule."""
        from engine.results import constant_loss
        from engine.train.until import epoch_cap

        cell = f"train/{ds.name}/{kind}/{width}/{seed}" + ("/adversarial" if adversarial else "")
        cell += f"/dk{dk}" if dk_cell else ""
        model = self.new_model(kind, width, seed, ds, d_k=dk)
        init_state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        x, y = self.ctx.to_device(ds.x_train_raw), self.ctx.to_device(ds.y_train)
        probe, k0 = drift_probe(model, x, seed, self.ctx.spec.ntk)
        return _Job(
            key=self._model_key(ds, kind, width, seed, adversarial, dk),
            cell=cell,
            label=f"{kind} m={width} seed={seed}",
            model=model,
            init_state=init_state,
            ds=ds,
            x=x,
            y=y,
            probe=probe,
            k0=k0,
            epochs=epoch_cap(self.ctx.spec.train),
            baseline=constant_loss(ds.y_train),
            adversarial=adversarial,
            kind=kind,
            width=width,
            seed=seed,
            t0=time.perf_counter(),
        )

    def _train_one(self, job: _Job) -> Iterator[Event]:
        """The separate path: ``engine.train.train`` on one network (adversarial too)."""
        from engine.train import BatchTick, train
        from engine.train.until import stop_now

        sp = self.ctx.spec
        perturb = self._perturb(job) if job.adversarial else None
        gen = torch.Generator().manual_seed(batch_seed(job.seed, job.width))
        # until = converged: one loop to the cap, left at the first check where the guard
        # holds (engine.train.until): the weights of a fixed run of that many epochs.
        cfg = dataclasses.replace(sp.train, epochs=job.epochs)
        yield job.start()
        for st in train(
            job.model,
            job.x,
            job.y,
            cfg,
            generator=gen,
            perturb=perturb,
            should_stop=self.ctx.cancelled,
            tick=TICK_SECONDS,
        ):
            if isinstance(st, BatchTick):  # a long epoch (adversarial): its steps so far
                yield Progress("batch", st.batch, st.batches, job.label, cell=job.cell)
                continue
            stop = stop_now(sp.train, [*job.losses(), st.loss], job.baseline)
            yield from self._epoch_events(job, st, stop)
            if stop:
                break

    def _perturb(self, job: _Job) -> Perturb:
        """``job``'s adversarial-training perturbation (``spec.flip``'s recipe), its random
        starts drawn from a generator of its own seed (the same stacked or alone)."""
        from engine.train.adversarial import make_perturb

        sp = self.ctx.spec
        f = sp.flip
        return make_perturb(
            f.adv_recipe,
            f.adv_eps,
            f.adv_training_steps(),
            f.adv_alpha,
            random_start=f.random_start,
            norm=f.norm,
            generator=torch.Generator(device=self.ctx.device).manual_seed(job.seed),
            engine=sp.train.engine,
        )

    def _train_together(
        self, width: int, members: list[tuple[str, int]], dk: int | None, adversarial: bool = False
    ) -> Generator[Event, None, TrainedModel]:
        """The networks of ``members`` ((kind, seed) pairs at ``width``: the seeds of a kind,
        and on the fused step those of the other closed-form kind too, ``stack_kinds``;
        each on its own seed's subset) in one ``train_batched`` call; the first one's
        events stream live, the others' wait in ``_pending`` for their own cell (with the
        error of a network that diverged, raised there as the separate path raises it).
        ``adversarial``: each network attacks its own batches (its own ``_perturb``),
        stacked on the fused step only (elsewhere one at a time)."""
        from engine.train import fused
        from engine.train.batched import stackable, train_batched, worth_batching
        from engine.train.until import stop_now

        sp = self.ctx.spec

        def job(kind: str, seed: int) -> _Job:
            return self._job(kind, width, seed, self.ctx.dataset(seed=seed), adversarial, dk)

        first = job(*members[0])
        sizes = {self.ctx.dataset(seed=s).x_train_raw.shape for _, s in members}
        apart = adversarial and (
            fused.engine_of(sp.train) != "fused" or fused.plan(first.model) is None
        )
        if (
            apart
            or len(sizes) > 1
            or not worth_batching(first.model, self._step_batch(first.y.shape[0]), sp.train)
        ):
            # subsets of unequal size, steps bound by their fixed cost, or an adversarial
            # step without the closed form: one at a time
            yield from self._train_one(first)
            return self._finish(first, time.perf_counter() - first.t0)
        jobs = [first, *(job(k, s) for k, s in members[1:])]
        if not stackable([j.model for j in jobs], sp.train):  # kinds that cannot share a step
            jobs = [j for j in jobs if j.kind == first.kind]
        t0 = time.perf_counter()
        out: list[list[Event]] = [[j.start()] for j in jobs]
        yield from out[0]
        out[0] = []
        every = sp.ntk.drift_every
        cfg = dataclasses.replace(sp.train, epochs=jobs[0].epochs)
        errors: dict[int, str] = {}
        for ev in train_batched(
            [j.model for j in jobs],
            torch.stack([j.x for j in jobs]),
            torch.stack([j.y for j in jobs]),
            cfg,
            generators=[torch.Generator().manual_seed(batch_seed(j.seed, width)) for j in jobs],
            stop=lambda b, losses: stop_now(sp.train, losses, jobs[b].baseline),
            should_stop=self.ctx.cancelled,
            batch_networks=sp.train.batch_networks,
            raise_diverged=False,
            sync=lambda b, e: jobs[b].k0 is not None and bool(every) and e % every == 0,
            perturbs=[self._perturb(j) for j in jobs] if adversarial else None,
            tick=TICK_SECONDS if adversarial else None,
        ):
            if ev.tick is not None:  # a long epoch: the steps of the stack so far
                t = ev.tick
                yield Progress("batch", t.batch, t.batches, jobs[0].label, cell=jobs[0].cell)
                continue
            for b, st in zip(ev.networks, ev.stats):
                if b in ev.diverged:  # the first seed's fails its cell now, as alone
                    if b == 0:
                        raise DivergedError(ev.diverged[b])
                    errors[b] = ev.diverged[b]
                    continue
                out[b].extend(self._epoch_events(jobs[b], st, b in ev.stopped))
            yield from out[0]
            out[0] = []
        share = (time.perf_counter() - t0) / len(jobs)  # the group's wall time, split evenly
        for b, j in enumerate(jobs):
            j.model.eval()
            if b in errors:
                self._pending[j.key] = (out[b], errors[b])
                continue
            self._finish(j, share)
            if b:
                self._pending[j.key] = (out[b], None)
        return self._trained[jobs[0].key]

    def _step_batch(self, n: int) -> int:
        """Points a training step sees: n for full-batch GD, else the batch size."""
        tr = self.ctx.spec.train
        return n if tr.optimizer == "gd" else min(tr.batch_size, n)

    def _epoch_events(self, job: _Job, st: Any, stop: bool) -> list[Event]:
        """One epoch's events and records of ``job`` (``st``: its ``EpochStats``; its model
        holds that epoch's weights when a drift is due): the same for both paths."""
        job.history.append({"epoch": st.epoch, "loss": st.loss, "accuracy": st.accuracy})
        evs: list[Event] = [
            Metric("train_loss", st.loss, st.epoch, cell=job.cell),
            Metric("train_accuracy", st.accuracy, st.epoch, cell=job.cell),
        ]
        every = self.ctx.spec.ntk.drift_every
        if job.k0 is not None and every and (st.epoch % every == 0 or stop):
            v = drift(job.model, job.probe, job.k0)
            job.drift.append((st.epoch, v))
            job.model.train()
            evs.append(Metric("kernel_drift", v, st.epoch, cell=job.cell))
        evs.append(Progress("cell", st.epoch, job.epochs, job.label, cell=job.cell))
        return evs

    def _finish(self, job: _Job, seconds: float) -> TrainedModel:
        """The trained ``job`` evaluated, cached and returned."""
        from engine.train import evaluate
        from engine.train.until import stop_reason

        model, ds = job.model, job.ds
        model.eval()
        tr_loss, tr_acc = evaluate(model, job.x, job.y)
        te_loss, te_acc = evaluate(
            model, self.ctx.to_device(ds.x_test_raw), self.ctx.to_device(ds.y_test)
        )
        tm = TrainedModel(
            model=model,
            init_state=job.init_state,
            dataset=ds,
            kind=job.kind,
            width=job.width,
            seed=job.seed,
            adversarial=job.adversarial,
            train_loss=tr_loss,
            train_accuracy=tr_acc,
            test_accuracy=te_acc,
            test_loss=te_loss,
            seconds=seconds,
            history=job.history,
            drift=job.drift,
            stopped=stop_reason(self.ctx.spec.train, job.losses(), job.baseline),
        )
        self._trained[job.key] = tm
        return tm
