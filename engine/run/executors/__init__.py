"""Executors: where the cells of a sweep run (README "Scale out").

An experiment describes its sweep as a list of ``Cell``s (a pure, picklable cell
function plus its inputs) and hands it to ``run_cells(ctx, cells)``; the executor
named by ``spec.executor.kind`` runs them:

* ``local`` (default): in this process, one after another, events streamed live;
* ``ray``: as Ray tasks, on a local Ray (this machine's cores) or a cluster.

Either way the driver, the process that consumes ``run(spec)``, is the only writer
of the run directory: a cell's events come back to it, and ``run_cells`` yields
them in plan order, so the tables are the same whatever the order cells finish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.errors import ConfigError
from engine.run.executors.base import Cell, CellOutcome, run_cells

if TYPE_CHECKING:
    from engine.run.spec import ExecutorSpec

RAY_HINT = (
    "Ray is not installed here; install it with: pip install -e '.[ray]'  (or: pip install ray)"
)


def check_executor(es: ExecutorSpec) -> None:
    """Fail early (before a run directory exists) when the executor cannot run here."""
    if es.kind == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ConfigError("executor", "ray", RAY_HINT) from None


def make_executor(es: ExecutorSpec) -> Any:
    """The executor object for ``es`` (None for ``local``: ``run_cells`` runs cells inline)."""
    if es.kind == "local":
        return None
    check_executor(es)
    from engine.run.executors.ray import RayExecutor

    return RayExecutor(es)


__all__ = ["RAY_HINT", "Cell", "CellOutcome", "check_executor", "make_executor", "run_cells"]
