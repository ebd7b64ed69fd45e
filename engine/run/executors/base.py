"""Cells, their outcomes and the driver loop ``run_cells`` shared by every executor."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.errors import Cancelled
from engine.run.events import CellFailed, CellFinished, Event, Log, Progress

if TYPE_CHECKING:
    from engine.run.context import RunContext

CellFn = Callable[..., Iterator[Event]]
"""``fn(ctx, cell_id, *args)`` yields the cell's events (rows, artifacts, metrics).

It must be a module-level function (Ray pickles it by reference) and depend only on
``ctx.spec``, ``ctx.dataset(seed=data_seed)`` and ``args``: the executor may run it in
another process, on another node, with a fresh ``RunContext``."""


@dataclass(frozen=True)
class Cell:
    """One independent unit of a sweep, e.g. one (model, width, seed) of ``ntk``."""

    id: str
    """The resume marker, e.g. ``ntk/digits/relu/16/0``."""
    fn: CellFn
    args: tuple[Any, ...]
    """Picklable inputs after ``(ctx, id)``: ints, strings, floats."""
    data_seed: int
    """The data subset the cell reads (``ctx.dataset(seed=data_seed)``)."""
    label: str = ""
    """Progress text."""
    sizes: tuple[int, int] | None = None
    """(n_train, n_test) of the subset when not the spec's (``ctx.dataset(seed, n_train=…)``)."""
    batch: tuple[Any, Any] | None = None
    """(group, member): cells whose networks may train side by side. In this process (the
    local executor) ``RunContext.plan_batches`` hands each group its members still to run,
    e.g. ((kind, width), seed) for a cell that trains ``ctx.train_model(kind, width,
    seed)``; the group's first cell trains them all (``engine.train.batched``), each
    network exactly as alone. A Ray task runs one cell in a fresh context with no plan,
    so its network trains alone (one cell a task)."""


@dataclass(frozen=True)
class CellOutcome:
    """What came back from one cell run remotely: its events, or its error."""

    index: int
    """Position of the cell in the plan."""
    events: tuple[Event, ...] = ()
    error: tuple[str, str] | None = None
    """(exception class, message) when every attempt failed."""
    seconds: float = 0.0
    host: str = field(default="", compare=False)


def run_cells(ctx: RunContext, cells: list[Cell], *, task: str = "sweep") -> Iterator[Event]:
    """Run ``cells`` (skipping those finished in the run being resumed) and yield events.

    ``Progress(task, done, total, running=k)`` advances as cells complete; each cell's
    events, then ``CellFinished`` (or ``CellFailed`` with its error), come out in plan
    order. On cancellation (``ctx.cancel`` or Ctrl-C) outstanding cells are cancelled,
    every cell that finished is still yielded, then ``Cancelled`` is raised (Ctrl-C and
    SIGTERM: the KeyboardInterrupt again, so the run closes "interrupted" as a local one).
    """
    total = len(cells)
    todo = [(i, c) for i, c in enumerate(cells) if not ctx.is_done(c.id)]
    executor = ctx.executor
    if executor is None:  # local: today's behaviour, events streamed as they happen
        ctx.plan_batches(c.batch for _, c in todo if c.batch is not None)
        for i, c in todo:
            yield Progress(task, i, total, c.label)
            ctx.check_cancel()
            yield from c.fn(ctx, c.id, *c.args)
            yield CellFinished(c.id)
        yield Progress(task, total, total, "done")
        return
    done = total - len(todo)
    yield Progress(task, done, total, f"{len(todo)} cells to run on {executor.describe()}")
    order = [i for i, _ in todo]
    buffered: dict[int, CellOutcome] = {}
    pos = 0
    try:
        for out, running in executor.run(ctx, todo):
            done += 1
            buffered[out.index] = out
            state = "failed" if out.error else f"{out.seconds:.1f} s"
            msg = f"{cells[out.index].label}: {state}; {running} in flight"
            yield Progress(task, done, total, msg, running=running)
            while pos < len(order) and order[pos] in buffered:
                yield from _emit(cells[order[pos]], buffered.pop(order[pos]))
                pos += 1
    except (Cancelled, KeyboardInterrupt) as e:
        for i in sorted(buffered):  # finished after a cell still running: keep them
            yield from _emit(cells[i], buffered[i])
        if isinstance(e, KeyboardInterrupt):  # Ctrl-C, SIGTERM: "interrupted", as locally
            raise
        raise Cancelled(
            f"the run was cancelled; {done} of {total} cells finished and are kept"
        ) from None
    yield Progress(task, total, total, "done")


def _emit(cell: Cell, out: CellOutcome) -> Iterator[Event]:
    if out.error is not None:
        err, msg = out.error
        yield Log(f"cell {cell.id} failed: {err}: {msg}", "warning")
        yield CellFailed(cell.id, err, msg)
        return
    yield from out.events
    yield CellFinished(cell.id)
