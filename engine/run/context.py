"""The run context: the spec, device, cached data sets, resume state, cancel flag and notes
that every experiment function sees. Training (models, their cache, which cells train
together, twins, drift probes) is the trainer's (``engine.run.training``); the context
hands its public names through, so experiments call ``ctx.train_model`` etc."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.data.dataset import Dataset
from engine.device import flush_denormals, resolve_device
from engine.errors import Cancelled, DatasetError
from engine.run.spec import RunSpec
from engine.run.trained import TrainedModel, batch_seed
from engine.run.training import Trainer

__all__ = ["DTYPES", "Resume", "RunContext", "TrainedModel", "batch_seed"]

DTYPES = {"float32": torch.float32, "float64": torch.float64}


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
        flush_denormals(self.device)  # Adam's decaying moments (engine/device.py)
        self.dtype = DTYPES[spec.dtype]
        self.done_cells = frozenset(resume.done_cells)
        self.cancel = resume.cancel
        self._datasets: dict[tuple[Any, ...], Dataset] = {}
        self._memo: dict[tuple[Any, ...], Any] = {}
        self._executor: Any = executor
        self.trainer = Trainer(self)
        # the trainer's public names, where experiments have always called them
        self.new_model = self.trainer.new_model
        self.plan_batches = self.trainer.plan_batches
        self.planned = self.trainer.planned
        self.train_model = self.trainer.train_model
        self.train_linearized = self.trainer.train_linearized

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
                    center=d.centring,
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
