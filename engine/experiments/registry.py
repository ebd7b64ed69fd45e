"""The experiment registry: modules ``engine/experiments/exp_*.py`` register themselves."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import ConfigError

if TYPE_CHECKING:
    from engine.experiments.context import RunContext
    from engine.experiments.events import Event

ExperimentFn = Callable[["RunContext"], Iterator["Event"]]


@dataclass(frozen=True)
class Experiment:
    """A registered experiment: ``fn(ctx)`` yields events; ``order`` sorts ``all``."""

    name: str
    description: str
    fn: ExperimentFn
    order: int = 100
    cells: bool = False
    """Its sweep is split into cells (``executors.run_cells``): they run on any executor."""


_REGISTRY: dict[str, Experiment] = {}


def register(
    name: str, description: str, *, order: int = 100, cells: bool = False
) -> Callable[[ExperimentFn], ExperimentFn]:
    """Decorator: register ``fn`` as experiment ``name`` (``cells``: split into cells)."""

    def deco(fn: ExperimentFn) -> ExperimentFn:
        _REGISTRY[name] = Experiment(name, description, fn, order, cells)
        return fn

    return deco


def _discover() -> None:
    import engine.experiments as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name.startswith("exp_"):
            importlib.import_module(f"engine.experiments.{mod.name}")


def experiments() -> dict[str, Experiment]:
    """Every registered experiment, sorted by ``order``."""
    _discover()
    return dict(sorted(_REGISTRY.items(), key=lambda kv: (kv[1].order, kv[0])))


def select(names: str) -> list[Experiment]:
    """``all`` or a comma-separated list of names → experiments in run order."""
    known = experiments()
    if names == "all":
        return list(known.values())
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    bad = [n for n in wanted if n not in known]
    if bad or not wanted:
        raise ConfigError("experiment", names, f"all or a comma-separated list of: {', '.join(known)}")
    return sorted((known[n] for n in dict.fromkeys(wanted)), key=lambda e: (e.order, e.name))


def describe() -> list[dict[str, Any]]:
    """[{name, description}] for help texts."""
    return [{"name": e.name, "description": e.description} for e in experiments().values()]
