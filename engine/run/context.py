"""The run context: cached data sets and trained models shared between experiments."""

from __future__ import annotations

import copy
import dataclasses
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from engine.data.dataset import Dataset
from engine.device import resolve_device
from engine.errors import Cancelled, ConfigError, DatasetError, DivergedError
from engine.run.events import Event, Metric, Progress
from engine.run.spec import RunSpec, TrainSpec

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def batch_seed(seed: int, width: int) -> int:
    """Seed of the batch-order generator of the cell (seed, width): the network and its
    linearized twin draw the same mini-batches in the same order."""
    return 10_007 * int(seed) + int(width)


@dataclass
class TrainedModel:
    """A model trained once per run (shared by every experiment that needs it)."""

    model: nn.Module
    init_state: dict[str, torch.Tensor]
    dataset: Dataset
    kind: str
    width: int
    seed: int
    adversarial: bool
    train_loss: float
    train_accuracy: float
    test_accuracy: float
    test_loss: float
    seconds: float
    history: list[dict[str, float]] = field(default_factory=list)
    drift: list[tuple[int, float]] = field(default_factory=list)

    def init_model(self) -> nn.Module:
        """A copy of the model with its weights at initialisation."""
        m = copy.deepcopy(self.model)
        m.load_state_dict(self.init_state)
        return m.eval()

    @property
    def converged(self) -> bool:
        """Whether training settled (``engine.results.converged`` on the epoch losses)."""
        from engine.results import constant_loss, converged

        return converged(
            (h["loss"] for h in self.history), baseline=constant_loss(self.dataset.y_train)
        )

    @property
    def above_chance(self) -> bool:
        """Whether the test accuracy beats the majority-class rate (one-sided binomial)."""
        from engine.results import above_chance, majority_rate

        ds = self.dataset
        return above_chance(self.test_accuracy, ds.n_test, majority_rate(ds.y_test))

    @property
    def epochs_run(self) -> int:
        """Epochs it trained (``train.epochs``, or fewer/more under until = converged)."""
        return len(self.history)

    def replay(self, cfg: TrainSpec) -> TrainSpec:
        """``cfg`` as a fixed run of the epochs this model ran: what its linearized twin
        and the retraining check train for."""
        return dataclasses.replace(cfg, epochs=self.epochs_run, until="fixed")

    def guards(self) -> dict[str, bool]:
        """The guard columns of every row measured on this model (``converged``,
        ``above_chance``; docs/claims.md#guards)."""
        return {"converged": self.converged, "above_chance": self.above_chance}


@dataclass
class _Job:
    """One network being trained by ``RunContext.train_model`` (either path)."""

    key: tuple[Any, ...]
    cell: str
    label: str
    model: nn.Module
    init_state: dict[str, torch.Tensor]
    ds: Dataset
    x: torch.Tensor
    y: torch.Tensor
    probe: torch.Tensor
    k0: torch.Tensor | None
    epochs: int
    baseline: float
    adversarial: bool
    kind: str
    width: int
    seed: int
    t0: float
    history: list[dict[str, float]] = field(default_factory=list)
    drift: list[tuple[int, float]] = field(default_factory=list)

    def losses(self) -> list[float]:
        return [h["loss"] for h in self.history]

    def start(self) -> Progress:
        return Progress("cell", 0, self.epochs, f"training {self.label}", cell=self.cell)


@dataclass(frozen=True)
class Resume:
    """What a run carries in from the run it resumes, and its cancel flag: the one
    declaration of the bundle that ``run``, ``execute``, the worker and the TUI's runners
    pass down to the context."""

    done_cells: frozenset[str] = frozenset()
    """Cells that finished in the run being resumed: skipped."""
    cancel: threading.Event | None = None
    """Checked between events; set: the run stops with ``Cancelled``."""
    previous_rows: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    """table → rows of those cells, so summaries cover them too."""
    previous_artifacts: Mapping[str, list[Any]] = field(default_factory=dict)
    """artifact name → data of those cells' artifacts (summaries that need more than rows)."""

    def to_json(self) -> dict[str, Any]:
        """The wire form (the worker's request, a JSON object): done cells, previous rows
        and artifacts. The cancel flag stays behind: the worker has its own."""
        from engine.run.events import to_jsonable

        out: dict[str, Any] = to_jsonable(
            {
                "done_cells": sorted(self.done_cells),
                "previous_rows": dict(self.previous_rows),
                "previous_artifacts": dict(self.previous_artifacts),
            }
        )
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], *, cancel: threading.Event | None = None) -> Resume:
        """``to_json``'s object back (missing keys: nothing to resume), with ``cancel``."""
        rows = obj.get("previous_rows") or {}
        artifacts = obj.get("previous_artifacts") or {}
        return cls(
            frozenset(str(c) for c in obj.get("done_cells") or ()),
            cancel,
            {str(t): [dict(r) for r in rs] for t, rs in rows.items()},
            {str(k): list(v) for k, v in artifacts.items()},
        )


class RunContext:
    """What an experiment function sees: the spec, the device, data, trained models."""

    def __init__(
        self,
        spec: RunSpec,
        *,
        resume: Resume | None = None,
        executor: Any = None,
    ) -> None:
        resume = resume if resume is not None else Resume()
        self.spec = spec
        self._previous = dict(resume.previous_rows)
        self._previous_artifacts = dict(resume.previous_artifacts)
        self._notes: list[str] = []
        self._noted: set[str] = set()
        self.device = resolve_device(spec.device)
        self.dtype = DTYPES[spec.dtype]
        self.done_cells = frozenset(resume.done_cells)
        self.cancel = resume.cancel
        self._datasets: dict[tuple[Any, ...], Dataset] = {}
        self._trained: dict[tuple[Any, ...], TrainedModel] = {}
        self._twins: dict[tuple[Any, ...], nn.Module] = {}
        self._groups: dict[Any, list[Any]] = {}
        self._pending: dict[tuple[Any, ...], tuple[list[Event], str | None]] = {}
        self._memo: dict[tuple[Any, ...], Any] = {}
        self._executor: Any = executor

    @property
    def executor(self) -> Any:
        """Where sweep cells run, as the driver built it (``engine.run.executors.
        make_executor``); None: in this process."""
        return self._executor

    def memo(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """``make()`` once per ``key`` in this context (e.g. f_NTK per data set, model, seed)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    # -- control -----------------------------------------------------------------

    def is_done(self, cell: str) -> bool:
        """True when ``cell`` finished in the run being resumed."""
        return cell in self.done_cells

    def previous_rows(self, table: str) -> list[dict[str, Any]]:
        """Rows of ``table`` from the finished cells of the run being resumed, as a live
        row has them (``engine.results.tables``: a JSON null back to NaN for a number,
        None for an integer or a guard), so a summary covers every cell, not just the
        recomputed ones. A table without a row type keeps its JSON values, nulls as NaN."""
        from engine.results.tables import TABLES

        rows = self._previous.get(table, [])
        if table in TABLES:
            return [TABLES[table].from_row(r).to_row() for r in rows]
        return [{k: float("nan") if v is None else v for k, v in r.items()} for r in rows]

    def previous_artifacts(self, name: str) -> list[Any]:
        """Data of artifact ``name`` from the finished cells of the run being resumed."""
        return list(self._previous_artifacts.get(name, []))

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def check_cancel(self) -> None:
        """Raise ``Cancelled`` when the user asked to stop."""
        if self.cancelled():
            raise Cancelled("the run was cancelled; finished cells are kept")

    # -- data --------------------------------------------------------------------

    def dataset(
        self,
        name: str | None = None,
        seed: int | None = None,
        *,
        n_train: int | None = None,
        n_test: int | None = None,
    ) -> Dataset:
        """The spec's data subset for ``seed`` (default: the first seed), cached.

        ``name`` loads another data set with the same subset options; its files are
        looked for under ``data.data_dir`` first, then the usual places. ``n_train`` /
        ``n_test`` override the subset sizes (``influence_check``'s small subset).
        """
        from engine.data import load_dataset

        d = self.spec.data
        name = name or d.name
        seed = self.spec.seeds[0] if seed is None else seed
        ntr = d.n_train if n_train is None else n_train
        nte = d.n_test if n_test is None else n_test
        key = self._data_key(name, seed, ntr, nte)
        if key not in self._datasets:

            def load(root: str | None) -> Dataset:
                return load_dataset(
                    name,
                    root=root,
                    classes=d.classes,
                    n_train=ntr,
                    n_test=nte,
                    seed=seed,
                    center=d.center,
                    source=d.source_options(),
                )

            try:
                ds = load(d.data_dir)
            except DatasetError:
                # The explicit folder is the main data set's: it is never replaced for that
                # one; an extra data set (spectrum.datasets) not in it is looked up as
                # usual, and the run says so.
                if name == d.name or d.data_dir is None:
                    raise
                ds = load(None)
                from engine.data import find_root

                self.note(
                    f"{name}: not in --data-dir {d.data_dir}; using {find_root(name) or 'the built-in copy'}"
                )
            self._datasets[key] = ds
            for note in ds.notes:  # the same note for every seed: report it once
                self.note(note)
        return self._datasets[key]

    def adopt_dataset(self, ds: Dataset, seed: int, sizes: tuple[int, int] | None = None) -> None:
        """Use ``ds`` as the subset for ``seed`` (a remote cell gets it from the driver);
        ``sizes``: the (n_train, n_test) it was drawn with when not the spec's."""
        d = self.spec.data
        ntr, nte = sizes if sizes is not None else (d.n_train, d.n_test)
        self._datasets[self._data_key(d.name, seed, ntr, nte)] = ds

    def _data_key(self, name: str, seed: int, n_train: int, n_test: int) -> tuple[Any, ...]:
        """The cache key of a subset: (name, seed), plus the sizes when not the spec's."""
        d = self.spec.data
        return (
            (name, seed)
            if (n_train, n_test) == (d.n_train, d.n_test)
            else (name, seed, n_train, n_test)
        )

    def note(self, text: str) -> None:
        """A one-line note for the run's log (each text once per run)."""
        if text not in self._noted:
            self._noted.add(text)
            self._notes.append(text)

    def drain_notes(self) -> list[str]:
        """One-line notes (e.g. "only the test split found") not yet reported."""
        out, self._notes = self._notes, []
        return out

    def to_device(self, t: torch.Tensor) -> torch.Tensor:
        """Move a tensor to the run's device (floating tensors also to its dtype)."""
        if torch.is_floating_point(t):
            return t.to(self.device, self.dtype)
        return t.to(self.device)

    def context_rows(self, ds: Dataset) -> torch.Tensor:
        """The attention context: training rows, plus test rows when transductive."""
        x = ds.x_train
        if self.spec.data.transductive:
            x = torch.cat([x, ds.x_test])
        return self.to_device(x)

    # -- models ------------------------------------------------------------------

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

        sp = self.spec
        rows = self.context_rows(ds) if context is None else context
        shift = None if ds.pixel_mean is None else ds.pixel_mean.to(self.device)
        return build_model(
            kind,
            rows,
            width,
            ds.n_out,
            sigma_w=sp.model.sigma_w,
            train_output=sp.model.train_output,
            seed=seed,
            dtype=self.dtype,
            d_k=d_k,
            init_std=sp.qkv.init_std or None,
            input_shift=shift,
        ).to(self.device)

    def plan_batches(self, batches: Iterable[tuple[Any, Any]]) -> None:
        """The (group, member) pairs of the cells about to run in this process
        (``Cell.batch``; ``run_cells`` passes them): ``planned(group)`` lists a group's
        members in plan order. ``train_model`` reads the groups (kind, width), members
        the seeds: with ``train.batch_networks`` > 1, the first call of a (kind, width)
        trains every planned seed of it not yet trained in one ``train_batched`` call,
        and each later seed's call replays its own events and returns its model.
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
        (``plan_batches``) train side by side in ``engine.train.batched`` where its
        ``worth_batching`` says so (never on a CPU: measured no faster there), each exactly
        as alone (own init, batch order, stop, drift probe, divergence); adversarial
        training (its PGD step perturbs each network's own batches), a d_k override and a
        data set passed in train one network at a time.
        """
        ds = dataset if dataset is not None else self.dataset(seed=seed)
        dk = (d_k if d_k is not None else self.spec.qkv.d_k or None) if kind == "qkv" else None
        key = self._model_key(ds, kind, width, seed, adversarial, dk)
        if key in self._pending:  # trained with other seeds: this cell's events now
            events, error = self._pending.pop(key)
            yield from events
            if error is not None:
                raise DivergedError(error)
        if key in self._trained:
            return self._trained[key]
        together = [seed]
        if (
            dataset is None
            and not adversarial
            and d_k is None
            and self.spec.train.batch_networks > 1
        ):
            for s in self.planned((kind, width)):
                k = self._model_key(self.dataset(seed=s), kind, width, s, False, dk)
                if s != seed and k not in self._trained and k not in self._pending:
                    together.append(s)
        if len(together) > 1:
            return (yield from self._train_together(kind, width, together, dk))
        job = self._job(kind, width, seed, ds, adversarial, dk, d_k is not None)
        yield from self._train_one(job)
        return self._finish(job, time.perf_counter() - job.t0)

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
        x, y = self.to_device(ds.x_train_raw), self.to_device(ds.y_train)
        probe, k0 = self._drift_probe(model, x, seed)
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
            epochs=epoch_cap(self.spec.train),
            baseline=constant_loss(ds.y_train),
            adversarial=adversarial,
            kind=kind,
            width=width,
            seed=seed,
            t0=time.perf_counter(),
        )

    def _train_one(self, job: _Job) -> Iterator[Event]:
        """The separate path: ``engine.train.train`` on one network (adversarial too)."""
        from engine.train import train
        from engine.train.until import stop_now

        sp = self.spec
        perturb = None
        if job.adversarial:
            from engine.train.adversarial import make_perturb

            f = sp.flip
            perturb = make_perturb(
                f.adv_recipe,
                f.adv_eps,
                f.adv_training_steps(),
                f.adv_alpha,
                random_start=f.random_start,
                norm=f.norm,
                generator=torch.Generator(device=self.device).manual_seed(job.seed),
            )
        gen = torch.Generator().manual_seed(batch_seed(job.seed, job.width))
        # until = converged: one loop to the cap, left at the first check where the guard
        # holds (engine.train.until): the weights of a fixed run of that many epochs.
        cfg = dataclasses.replace(sp.train, epochs=job.epochs)
        yield job.start()
        for st in train(
            job.model, job.x, job.y, cfg, generator=gen, perturb=perturb, should_stop=self.cancelled
        ):
            stop = stop_now(sp.train, [*job.losses(), st.loss], job.baseline)
            yield from self._epoch_events(job, st, stop)
            if stop:
                break

    def _train_together(
        self, kind: str, width: int, seeds: list[int], dk: int | None
    ) -> Generator[Event, None, TrainedModel]:
        """The networks of ``kind`` at ``width`` for ``seeds`` (same shape, each on its
        own seed's subset) in one ``train_batched`` call; the first seed's events stream
        live, the others' wait in ``_pending`` for their own cell (with the error of a
        network that diverged, raised there as the separate path raises it)."""
        from engine.train.batched import train_batched, worth_batching
        from engine.train.until import stop_now

        sp = self.spec
        first = self._job(kind, width, seeds[0], self.dataset(seed=seeds[0]), False, dk)
        sizes = {self.dataset(seed=s).x_train_raw.shape for s in seeds}
        if len(sizes) > 1 or not worth_batching(first.model, self._step_batch(first.y.shape[0])):
            # subsets of unequal size, or steps bound by their fixed cost: one at a time
            yield from self._train_one(first)
            return self._finish(first, time.perf_counter() - first.t0)
        jobs = [
            first,
            *(self._job(kind, width, s, self.dataset(seed=s), False, dk) for s in seeds[1:]),
        ]
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
            generators=[torch.Generator().manual_seed(batch_seed(s, width)) for s in seeds],
            stop=lambda b, losses: stop_now(sp.train, losses, jobs[b].baseline),
            should_stop=self.cancelled,
            batch_networks=sp.train.batch_networks,
            raise_diverged=False,
            sync=lambda b, e: jobs[b].k0 is not None and bool(every) and e % every == 0,
        ):
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
        tr = self.spec.train
        return n if tr.optimizer == "gd" else min(tr.batch_size, n)

    def _epoch_events(self, job: _Job, st: Any, stop: bool) -> list[Event]:
        """One epoch's events and records of ``job`` (``st``: its ``EpochStats``; its model
        holds that epoch's weights when a drift is due): the same for both paths."""
        job.history.append({"epoch": st.epoch, "loss": st.loss, "accuracy": st.accuracy})
        evs: list[Event] = [
            Metric("train_loss", st.loss, st.epoch, cell=job.cell),
            Metric("train_accuracy", st.accuracy, st.epoch, cell=job.cell),
        ]
        every = self.spec.ntk.drift_every
        if job.k0 is not None and every and (st.epoch % every == 0 or stop):
            v = self._drift(job.model, job.probe, job.k0)
            job.drift.append((st.epoch, v))
            job.model.train()
            evs.append(Metric("kernel_drift", v, st.epoch, cell=job.cell))
        evs.append(Progress("cell", st.epoch, job.epochs, job.label, cell=job.cell))
        return evs

    def _finish(self, job: _Job, seconds: float) -> TrainedModel:
        """The trained ``job`` evaluated, cached and returned."""
        from engine.train import evaluate

        model, ds = job.model, job.ds
        model.eval()
        tr_loss, tr_acc = evaluate(model, job.x, job.y)
        te_loss, te_acc = evaluate(model, self.to_device(ds.x_test_raw), self.to_device(ds.y_test))
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
        )
        self._trained[job.key] = tm
        return tm

    def train_linearized(self, tm: TrainedModel) -> Generator[Event, None, nn.Module]:
        """Train the linearized twin of ``tm`` (``engine.ntk.Linearized`` around its initial
        weights) with the run's loss, optimiser, L2, ``tm``'s epochs and batch order;
        ``yield from`` it. Cached per trained model; returns the twin in eval mode.

        The twins of the seeds whose networks trained together (``plan_batches``) train
        together too (``engine.train.batched``, each its own epochs, data and batch order);
        each later seed's call replays its own events."""
        from engine.ntk.linearized import Linearized
        from engine.train import train

        if tm.adversarial:
            raise ConfigError(
                "adversarial", True, "a standard-trained model (the twin has no attack)"
            )
        key = (id(tm), "linearized")
        if key in self._pending:
            events, error = self._pending.pop(key)
            yield from events
            if error is not None:
                raise DivergedError(error)
        if key in self._twins:
            return self._twins[key]
        group = [tm, *self._twin_group(tm)]
        if len(group) > 1:
            return (yield from self._train_twins(group))
        ds, cfg = tm.dataset, tm.replay(self.spec.train)  # the network's epochs
        epochs = cfg.epochs
        twin = Linearized(tm.init_model()).to(self.device)
        x, y = self.to_device(ds.x_train_raw), self.to_device(ds.y_train)
        gen = torch.Generator().manual_seed(batch_seed(tm.seed, tm.width))
        cell, label = self._twin_names(tm)
        yield Progress("cell", 0, epochs, f"training {label}", cell=cell)
        for st in train(twin, x, y, cfg, generator=gen, should_stop=self.cancelled):
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
        """The other planned seeds' trained models of ``tm``'s (kind, width) whose twins are
        not trained yet (none when ``tm`` is not the planned model of its seed, or its
        steps are bound by their fixed cost: ``engine.train.batched.worth_batching``)."""
        from engine.train.batched import worth_batching

        if self.spec.train.batch_networks <= 1:
            return []
        dk = self.spec.qkv.d_k or None if tm.kind == "qkv" else None
        seeds = self.planned((tm.kind, tm.width))

        def planned(s: int) -> TrainedModel | None:
            ds = self.dataset(seed=s)
            return self._trained.get(self._model_key(ds, tm.kind, tm.width, s, False, dk))

        if tm.seed not in seeds or planned(tm.seed) is not tm:
            return []
        if not worth_batching(tm.model, self._step_batch(tm.dataset.n_train)):
            return []
        out = []
        for s in seeds:
            other = planned(s)
            if s == tm.seed or other is None:
                continue
            if other.dataset.x_train_raw.shape != tm.dataset.x_train_raw.shape:
                continue  # unequal subsets: trained apart
            k = (id(other), "linearized")
            if k not in self._twins and k not in self._pending:
                out.append(other)
        return out

    def _train_twins(self, tms: list[TrainedModel]) -> Generator[Event, None, nn.Module]:
        """The twins of ``tms`` (same shape; each its network's epochs, subset and batch
        order) in one ``train_batched`` call; the first one's events stream live, the
        others' wait in ``_pending`` (with a divergence, raised in their own cell)."""
        from engine.ntk.linearized import Linearized
        from engine.train.batched import train_batched

        twins = [Linearized(tm.init_model()).to(self.device) for tm in tms]
        xs = [self.to_device(tm.dataset.x_train_raw) for tm in tms]
        ys = [self.to_device(tm.dataset.y_train) for tm in tms]
        runs = [tm.epochs_run for tm in tms]
        names = [self._twin_names(tm) for tm in tms]
        out: list[list[Event]] = [
            [Progress("cell", 0, e, f"training {label}", cell=cell)]
            for e, (cell, label) in zip(runs, names)
        ]
        yield from out[0]
        out[0] = []
        cfg = tms[0].replay(self.spec.train)
        cfg = dataclasses.replace(cfg, epochs=max(runs))
        errors: dict[int, str] = {}
        for ev in train_batched(
            twins,
            torch.stack(xs),
            torch.stack(ys),
            cfg,
            generators=[torch.Generator().manual_seed(batch_seed(tm.seed, tm.width)) for tm in tms],
            stop=lambda b, losses: len(losses) >= runs[b],
            should_stop=self.cancelled,
            batch_networks=self.spec.train.batch_networks,
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
                self._pending[key] = (out[b], errors[b])
                continue
            self._twins[key] = twin
            if b:
                self._pending[key] = (out[b], None)
        return twins[0]

    def _drift_probe(
        self, model: nn.Module, x: torch.Tensor, seed: int
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if not self.spec.ntk.drift_every:
            return x[:0], None
        try:
            from engine.ntk import empirical_ntk
        except ImportError:  # pragma: no cover - during development only
            return x[:0], None
        g = torch.Generator().manual_seed(seed)
        idx = torch.randperm(x.shape[0], generator=g)[: self.spec.ntk.drift_points].to(x.device)
        probe = x[idx]
        with torch.no_grad():
            k0 = empirical_ntk(model, probe, output=0 if self._n_out(model) > 1 else None)
        return probe, k0

    @staticmethod
    def _drift(model: nn.Module, probe: torch.Tensor, k0: torch.Tensor) -> float:
        from engine.ntk import empirical_ntk

        # For K outputs the first diagonal block: the co-activation pattern is what drifts
        # (with fixed ±1 heads every diagonal block is the same matrix).
        with torch.no_grad():
            kt = empirical_ntk(model, probe, output=0 if RunContext._n_out(model) > 1 else None)
        return float(torch.linalg.norm(kt - k0) / torch.linalg.norm(k0).clamp_min(1e-300))

    @staticmethod
    def _n_out(model: nn.Module) -> int:
        head = getattr(model, "head", None)
        return int(getattr(head, "n_out", 1))
