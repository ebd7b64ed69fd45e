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

from engine.run.executors.base import Cell, CellOutcome, check_executor, run_cells

__all__ = ["Cell", "CellOutcome", "check_executor", "run_cells"]
