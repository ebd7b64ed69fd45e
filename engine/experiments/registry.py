"""The experiment registry: the catalogue's modules (``CATALOGUE``) register themselves."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import ConfigError

if TYPE_CHECKING:
    from engine.run.context import RunContext
    from engine.run.events import Event
    from engine.run.spec import RunSpec

ExperimentFn = Callable[["RunContext"], Iterator["Event"]]
Estimate = Callable[[Any], Any]
"""``engine.experiments.work.Estimate`` (Plan → Work), named loosely here: the
estimate module reads the registry, so the registry does not import it back."""


@dataclass(frozen=True)
class Experiment:
    """A registered experiment: ``fn(ctx)`` yields events; ``estimate(plan)`` is the work
    it plans (``engine.experiments.estimate``); ``order`` sorts ``all``."""

    name: str
    description: str
    fn: ExperimentFn
    estimate: Estimate
    order: int = 100
    cells: bool = False
    """Its sweep is split into cells (``executors.run_cells``): they run on any executor."""
    in_all: bool = True
    """Part of ``--experiment all`` (False: only when named, e.g. the retraining check)."""
    sizes: Callable[[RunSpec], tuple[int, int]] | None = None
    """(n_train, n_test) of the subset it draws, when not ``data.n_train`` / ``data.n_test``."""


_REGISTRY: dict[str, Experiment] = {}


LISTING: dict[str, str] = {
    "train": "Train 2L-ReLU and MLP-Attn per width and seed: loss, accuracy, curves",
    "spectrum": "Gram spectra: κ(G), κ(G³) = κ³, width thresholds, kernel alignment",
    "ntk": "NTK distance ‖f_m − f_NTK‖ and kernel distances vs width (Table 1)",
    "flip": "Influence flip rates of the top-10% training points under FGSM/PGD/MIM (Tables 2–3)",
    "influence_check": "Influence estimators (kernel LOO at 3 ridges, gradient) vs the"
    " PBRF response (or retraining) to removing each point",
    "advtrain": "Flip rates of PGD-adversarially trained models (Table 4)",
    "landscape": "Loss landscape: 1-D/2-D filter-normalised surfaces, interpolation,"
    " Hessian sharpness",
    "trainability": "Steps to a target loss vs κ(G) (synthetic spectra and the run's data):"
    " slope per model",
    "kappa_sweep": "Claims 1 and 3 against κ(G), sweeping the centring fraction α",
}
"""Every experiment's name and one-line description, in run order: the one place they are
written, read without importing the experiments (and torch) by ``describe``."""


def register(
    name: str,
    *,
    estimate: Estimate,
    order: int = 100,
    cells: bool = False,
    in_all: bool = True,
    sizes: Callable[[RunSpec], tuple[int, int]] | None = None,
) -> Callable[[ExperimentFn], ExperimentFn]:
    """Decorator: register ``fn`` as experiment ``name``, described in ``LISTING``, with
    its time estimate (``estimate``: required, so a new experiment without one fails at
    import; ``cells``: split into cells; ``in_all``: run by ``--experiment all``;
    ``sizes``: its own subset sizes)."""
    description = LISTING[name]  # an experiment not listed fails at import, in every test

    def deco(fn: ExperimentFn) -> ExperimentFn:
        _REGISTRY[name] = Experiment(name, description, fn, estimate, order, cells, in_all, sizes)
        return fn

    return deco


CATALOGUE = (
    "train",
    "ntk",
    "spectrum",
    "flip",
    "influence_check",
    "landscape",
    "trainability",
    "kappa_sweep",
)
"""The modules of ``engine/experiments/`` that hold experiments (listed, not discovered)."""


def _discover() -> None:
    for name in CATALOGUE:
        importlib.import_module(f"engine.experiments.{name}")


def experiments() -> dict[str, Experiment]:
    """Every registered experiment, sorted by ``order``."""
    _discover()
    return dict(sorted(_REGISTRY.items(), key=lambda kv: (kv[1].order, kv[0])))


def check_names(names: str) -> list[str]:
    """``all`` or a comma-separated list of names → the names asked for, checked against
    ``LISTING`` (which the registrations match, in order: tests/engine/experiments/
    test_registry_listing.py) without importing an experiment (and torch): ``ConfigError``
    naming what is allowed."""
    if names == "all":
        return list(LISTING)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if not wanted or any(n not in LISTING for n in wanted):
        raise ConfigError(
            "experiment", names, f"all or a comma-separated list of: {', '.join(LISTING)}"
        )
    return list(dict.fromkeys(wanted))


def select(names: str) -> list[Experiment]:
    """``all`` or a comma-separated list of names → experiments in run order."""
    wanted = check_names(names)
    known = experiments()
    if names == "all":
        return [e for e in known.values() if e.in_all]
    return sorted((known[n] for n in wanted), key=lambda e: (e.order, e.name))


def subset_sizes(spec: RunSpec) -> list[tuple[int, int]]:
    """The (n_train, n_test) subsets the run's experiments draw from ``data.name``."""
    out = [
        e.sizes(spec) if e.sizes is not None else (spec.data.n_train, spec.data.n_test)
        for e in select(spec.experiment)
    ]
    return list(dict.fromkeys(out))


def describe() -> list[dict[str, Any]]:
    """[{name, description}] in run order, for help texts (imports no experiment)."""
    return [{"name": n, "description": d} for n, d in LISTING.items()]
