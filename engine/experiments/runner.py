"""``run(spec)``: the generator of typed events behind every front end, and
``execute(spec, run_dir)``: the one loop that writes them to a run directory."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from engine.errors import EngineError
from engine.experiments.registry import select
from engine.run.context import Resume, RunContext
from engine.run.events import Event, Failed, Finished, Log, Progress, Started, Summary
from engine.run.executors import make_executor
from engine.run.spec import RunSpec
from engine.run.store import RunStore


def run(
    spec: RunSpec,
    *,
    resume: Resume | None = None,
) -> Iterator[Event]:
    """Run ``spec.experiment`` (or all) and yield its events.

    Ends with ``Finished(summary)`` or, on an expected error (bad data, a diverged
    run, cancellation), ``Failed(error, message)``; never raises an ``EngineError``.
    ``resume`` (``engine.run.context.Resume``): the cells finished in a run being
    resumed (skipped), their rows and artifacts (so summaries cover them), and the
    cancel flag, checked between events. The executor of sweep cells is built here
    (the driver) and handed to the context.
    """
    summary: dict[str, Any] = {}
    yield Started(spec.experiment, spec.to_dict())
    try:
        exps = select(spec.experiment)
        executor = None
        if spec.executor.kind != "local" and any(e.cells for e in exps):
            executor = make_executor(spec.executor)
        ctx = RunContext(spec, resume=resume, executor=executor)
        yield Log(f"device: {ctx.device}, dtype: {spec.dtype}")
        if spec.executor.kind != "local":
            local = [e.name for e in exps if not e.cells]
            if local:
                yield Log(
                    f"{', '.join(local)} not split into cells yet: run in this process "
                    f"(executor {spec.executor.kind} serves the others)",
                    "warning",
                )
        for i, exp in enumerate(exps):
            ctx.check_cancel()
            yield Progress("experiments", i, len(exps), exp.name)
            # Remote cells: run_cells polls the cancel flag itself and keeps the cells
            # that finished out of order; stopping it between events would drop them.
            polls = not (exp.cells and spec.executor.kind != "local")
            for ev in exp.fn(ctx):
                for note in ctx.drain_notes():
                    yield Log(note, "warning")
                if isinstance(ev, Summary):
                    summary[ev.section] = ev.data
                yield ev
                if polls:
                    ctx.check_cancel()
        yield Progress("experiments", len(exps), len(exps), "done")
        yield Finished(summary)
    except EngineError as e:
        yield Failed(type(e).__name__, str(e))


class EventSource(Protocol):
    """Where a run's events come from: ``run`` itself, or a stream from another process
    (the TUI's worker) that takes the same arguments."""

    def __call__(
        self,
        spec: RunSpec,
        *,
        resume: Resume,
    ) -> Iterator[Event]: ...


def execute(
    spec: RunSpec,
    run_dir: str | Path,
    *,
    resume: bool = False,
    cancel: threading.Event | None = None,
    on_event: Callable[[Event], None] | None = None,
    store: RunStore | None = None,
    source: EventSource | None = None,
) -> RunStore:
    """The one run loop (headless CLI, TUI runners): run ``spec`` into ``run_dir``.

    Opens the directory with ``RunStore`` (``resume``: keep its finished cells and skip
    them; ``store``: one the caller opened already), writes every event of ``source``
    (default ``run``) and hands it to ``on_event``. Returns the store, closed: finished,
    partial, failed or cancelled by the stream's last event; ``interrupted`` when the
    stream stopped short or Ctrl-C arrived (KeyboardInterrupt is re-raised); ``failed``
    when the source or ``on_event`` raised (re-raised).
    """
    st = store if store is not None else RunStore(run_dir, spec, resume=resume)
    previous = {t: [dict(r) for r in rows] for t, rows in st.tables.items()}
    src: EventSource = source if source is not None else run
    resumed = Resume(frozenset(st.done_cells), cancel, previous, st.previous_artifacts)
    try:
        for ev in src(spec, resume=resumed):
            st.write(ev)
            if on_event is not None:
                on_event(ev)
    except KeyboardInterrupt:
        st.close("interrupted")
        raise
    except BaseException:
        st.close("failed")
        raise
    st.close("interrupted")  # a no-op after Finished / Failed; else the stream was cut short
    return st
