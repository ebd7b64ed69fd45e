"""The linearized twins of a run's networks (``engine.ntk.Linearized``), trained as the
networks were: same loss, optimiser, L2, epochs and batch order; the twins of networks
that trained together (the seeds of a kind; on the fused step both closed-form kinds of
one width) train together (``engine.train.batched``, the fused step where the network
has one). Part of the run's trainer (``engine.run.training``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

import torch
from torch import nn

from engine.errors import ConfigError, DivergedError
from engine.run.events import Event, Progress
from engine.run.trained import TrainedModel, TrainerState, batch_seed


class TwinTrainer:
    """The twins of one ``Trainer``'s networks, cached per trained model."""

    def __init__(self, trainer: TrainerState) -> None:
        self.tr = trainer
        self._twins: dict[tuple[Any, ...], nn.Module] = {}

    def train(self, tm: TrainedModel) -> Generator[Event, None, nn.Module]:
        """Train the linearized twin of ``tm`` (``engine.ntk.Linearized`` around its initial
        weights) with the run's loss, optimiser, L2, ``tm``'s epochs and batch order;
        ``yield from`` it. Cached per trained model; returns the twin in eval mode.

        The twins of the networks that trained together (``plan_batches``,
        ``Trainer.stack_kinds``) train together too (``engine.train.batched``, each its own epochs, data and batch order);
        each later seed's call replays its own events."""
        from engine.ntk.linearized import Linearized
        from engine.train import train

        if tm.adversarial:
            raise ConfigError(
                "adversarial", True, "a standard-trained model (the twin has no attack)"
            )
        key = (id(tm), "linearized")
        if key in self.tr._pending:
            events, error = self.tr._pending.pop(key)
            yield from events
            if error is not None:
                raise DivergedError(error)
        if key in self._twins:
            return self._twins[key]
        group = [tm, *self._twin_group(tm)]
        if len(group) > 1:
            return (yield from self._train_twins(group))
        ds, cfg = tm.dataset, tm.replay(self.tr.ctx.spec.train)  # the network's epochs
        epochs = cfg.epochs
        twin = Linearized(tm.init_model()).to(self.tr.ctx.device)
        x, y = self.tr.ctx.to_device(ds.x_train_raw), self.tr.ctx.to_device(ds.y_train)
        gen = torch.Generator().manual_seed(batch_seed(tm.seed, tm.width))
        cell, label = self._twin_names(tm)
        yield Progress("cell", 0, epochs, f"training {label}", cell=cell)
        for st in train(twin, x, y, cfg, generator=gen, should_stop=self.tr.ctx.cancelled):
            yield Progress("cell", st.epoch, epochs, label, cell=cell)
        twin.eval()
        self._twins[key] = twin
        return twin

    @staticmethod
    def _twin_names(tm: TrainedModel) -> tuple[str, str]:
        ds = tm.dataset
        cell = f"linearized/{ds.name}/{tm.kind}/{tm.width}/{tm.seed}"
        return cell, f"twin {tm.kind} m={tm.width} seed={tm.seed}"

    def _twin_group(self, tm: TrainedModel) -> list[TrainedModel]:
        """The other planned networks of ``tm``'s width whose twins are not trained yet:
        its kind's seeds, and on the fused step the other closed-form kind's
        (``Trainer.stack_kinds``), ``tm``'s kind first (none when ``tm`` is not the
        planned model of its seed, or its steps are bound by their fixed cost:
        ``engine.train.batched.worth_batching``)."""
        from engine.train.batched import worth_batching

        if self.tr.ctx.spec.train.batch_networks <= 1:
            return []
        dk = self.tr.ctx.spec.qkv.d_k or None if tm.kind == "qkv" else None

        def planned(kind: str, s: int) -> TrainedModel | None:
            ds = self.tr.ctx.dataset(seed=s)
            return self.tr._trained.get(self.tr._model_key(ds, kind, tm.width, s, False, dk))

        if (
            tm.seed not in self.tr.planned((tm.kind, tm.width))
            or planned(tm.kind, tm.seed) is not tm
        ):
            return []
        if not worth_batching(
            tm.model, self.tr._step_batch(tm.dataset.n_train), self.tr.ctx.spec.train
        ):
            return []
        out = []
        for kind in self.tr.stack_kinds(tm.kind):
            for s in self.tr.planned((kind, tm.width)):
                other = planned(kind, s)
                if other is None or other is tm:
                    continue
                if other.dataset.x_train_raw.shape != tm.dataset.x_train_raw.shape:
                    continue  # unequal subsets: trained apart
                k = (id(other), "linearized")
                if k not in self._twins and k not in self.tr._pending:
                    out.append(other)
        return out

    def _train_twins(self, tms: list[TrainedModel]) -> Generator[Event, None, nn.Module]:
        """The twins of ``tms`` (same shape; each its network's epochs, subset and batch
        order) in one ``train_batched`` call; the first one's events stream live, the
        others' wait in ``_pending`` (with a divergence, raised in their own cell)."""
        from engine.ntk.linearized import Linearized
        from engine.train.batched import train_batched

        twins = [Linearized(tm.init_model()).to(self.tr.ctx.device) for tm in tms]
        xs = [self.tr.ctx.to_device(tm.dataset.x_train_raw) for tm in tms]
        ys = [self.tr.ctx.to_device(tm.dataset.y_train) for tm in tms]
        runs = [tm.epochs_run for tm in tms]
        names = [self._twin_names(tm) for tm in tms]
        out: list[list[Event]] = [
            [Progress("cell", 0, e, f"training {label}", cell=cell)]
            for e, (cell, label) in zip(runs, names)
        ]
        yield from out[0]
        out[0] = []
        cfg = tms[0].replay(self.tr.ctx.spec.train)
        cfg = dataclasses.replace(cfg, epochs=max(runs))
        errors: dict[int, str] = {}
        for ev in train_batched(
            twins,
            torch.stack(xs),
            torch.stack(ys),
            cfg,
            generators=[torch.Generator().manual_seed(batch_seed(tm.seed, tm.width)) for tm in tms],
            stop=lambda b, losses: len(losses) >= runs[b],
            should_stop=self.tr.ctx.cancelled,
            batch_networks=self.tr.ctx.spec.train.batch_networks,
            raise_diverged=False,
        ):
            for b, st in zip(ev.networks, ev.stats):
                if b in ev.diverged:
                    if b == 0:
                        raise DivergedError(ev.diverged[b])
                    errors[b] = ev.diverged[b]
                    continue
                cell, label = names[b]
                out[b].append(Progress("cell", st.epoch, runs[b], label, cell=cell))
            yield from out[0]
            out[0] = []
        for b, (tm, twin) in enumerate(zip(tms, twins)):
            twin.eval()
            key = (id(tm), "linearized")
            if b in errors:
                self.tr._pending[key] = (out[b], errors[b])
                continue
            self._twins[key] = twin
            if b:
                self.tr._pending[key] = (out[b], None)
        return twins[0]
