"""What training leaves behind: ``TrainedModel`` (a network trained once per run, shared by
the experiments) and the batch-order seed of a cell; ``engine.run.training`` makes them."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import nn

from engine.data.dataset import Dataset
from engine.run.events import Event, Progress
from engine.run.spec import RunSpec, TrainSpec


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
    stopped: str = ""
    """Why training ended (``engine.train.until.stop_reason``): ``cap``, ``converged``
    or ``stuck`` (until = converged: stuck at its initial loss, stopped early)."""

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
        ``above_chance``; docs/claims.md#guards), and ``stuck``: whether it was stopped as
        stuck at its initial loss (then not converged either)."""
        from engine.train.until import STUCK

        stuck = self.stopped == STUCK
        return {"converged": self.converged, "above_chance": self.above_chance, "stuck": stuck}


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


class RunState(Protocol):
    """What the trainer reads of its ``RunContext`` (which imports the trainer, so the
    trainer names it by this protocol: no import circle)."""

    spec: RunSpec
    device: torch.device
    dtype: torch.dtype

    def dataset(
        self,
        name: str | None = None,
        seed: int | None = None,
        *,
        n_train: int | None = None,
        n_test: int | None = None,
    ) -> Dataset: ...

    def to_device(self, t: torch.Tensor) -> torch.Tensor: ...

    def context_rows(self, ds: Dataset) -> torch.Tensor: ...

    def cancelled(self) -> bool: ...


class TrainerState(Protocol):
    """What ``engine.run.twins`` reads of its ``engine.run.training.Trainer`` (which
    imports the twins: no import circle)."""

    ctx: RunState
    _trained: dict[tuple[Any, ...], TrainedModel]
    _pending: dict[tuple[Any, ...], tuple[list[Event], str | None]]

    def planned(self, group: Any) -> list[Any]: ...

    def stack_kinds(self, kind: str) -> tuple[str, ...]: ...

    def _model_key(
        self, ds: Dataset, kind: str, width: int, seed: int, adversarial: bool, dk: int | None
    ) -> tuple[Any, ...]: ...

    def _step_batch(self, n: int) -> int: ...
