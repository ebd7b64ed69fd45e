"""The Ray executor: each cell is one Ray task; the driver collects their events.

* No address: a local Ray with this machine's cores (parallel cells on one machine);
  with one, the driver joins that cluster (``ray start --head`` / ``ray start
  --address=…``). Ray is started once per process and left running for later runs.
* Each data subset goes to the object store once (``ray.put``) and reaches the
  tasks as an argument, so worker nodes need no copy of the data set.
* A task pins torch to ``cpus_per_cell`` threads; a task whose worker died or which
  raised is retried ``max_retries`` times by Ray, then reported as failed.
* Cancellation (``ctx.cancel`` or Ctrl-C) force-cancels the tasks in flight.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from engine.errors import Cancelled, ConfigError
from engine.run.events import Event, Progress
from engine.run.executors.base import Cell, CellFn, CellOutcome

if TYPE_CHECKING:
    from engine.data.dataset import Dataset
    from engine.run.context import RunContext
    from engine.run.spec import ExecutorSpec, RunSpec

POLL_S = 0.2
"""How often the driver checks for cancellation while cells run."""
LOCAL_RAY_CONFIG = {
    "health_check_failure_threshold": 30,
    "health_check_timeout_ms": 30_000,
    "health_check_period_ms": 5_000,
}
"""A local Ray on a loaded laptop: a busy raylet must not be declared dead (that ends
the driver process too), so its health checks wait minutes rather than seconds."""


def run_cell_remote(
    fn: CellFn,
    cell_id: str,
    args: tuple[Any, ...],
    spec: RunSpec,
    data_seed: int,
    dataset: Dataset,
    threads: int,
    sizes: tuple[int, int] | None = None,
) -> tuple[list[Event], float, str]:
    """Body of one Ray task: run ``fn`` in a fresh context on ``dataset``.

    Returns the cell's events (per-epoch ``Progress`` dropped: the driver reports
    progress per cell), its wall time and the host it ran on.
    """
    import torch

    from engine.run.context import RunContext

    torch.set_num_threads(threads)  # one cell's numbers must not depend on its neighbours
    t0 = time.perf_counter()
    ctx = RunContext(spec.replace(executor__kind="local"))
    ctx.adopt_dataset(dataset, data_seed, sizes)
    events = [ev for ev in fn(ctx, cell_id, *args) if not isinstance(ev, Progress)]
    return events, time.perf_counter() - t0, socket.gethostname()


class RayExecutor:
    """Runs cells as Ray tasks; ``run`` yields ``(outcome, in_flight)`` as they finish."""

    def __init__(self, es: ExecutorSpec) -> None:
        import ray

        self.ray = ray
        self.es = es
        self._data: dict[tuple[Any, ...], Any] = {}
        self._remote: Any = None

    def describe(self) -> str:
        where = self.es.address or "a local Ray"
        return f"{where} ({self._cpus():g} CPUs, {self.es.cpus_per_cell} per cell)"

    def _start(self) -> None:
        ray = self.ray
        if not ray.is_initialized():
            kw: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.WARNING,
            }
            with _own_signal_handlers():
                try:
                    if self.es.address:
                        ray.init(address=self.es.address, **kw)
                    else:
                        ray.init(
                            num_cpus=os.cpu_count() or 1, _system_config=LOCAL_RAY_CONFIG, **kw
                        )
                except ConnectionError as e:
                    raise ConfigError(
                        "executor.address",
                        self.es.address or "local",
                        f"a Ray cluster that answers ({_one_line(e)[:120]})",
                    ) from None
        check_resources(self.es, _nodes(ray))
        if self._remote is None:
            self._remote = ray.remote(run_cell_remote).options(
                num_cpus=self.es.cpus_per_cell,
                num_gpus=self.es.gpus_per_cell,
                max_retries=self.es.max_retries,
                retry_exceptions=True,
            )

    def _cpus(self) -> float:
        if not self.ray.is_initialized():
            return float(os.cpu_count() or 1) if not self.es.address else 0.0
        return float(self.ray.cluster_resources().get("CPU", 1))

    def _capacity(self) -> int:
        cap = max(1, int(self._cpus() // self.es.cpus_per_cell))
        return min(cap, self.es.max_parallel) if self.es.max_parallel else cap

    def _dataset_ref(self, ctx: RunContext, seed: int, sizes: tuple[int, int] | None = None) -> Any:
        # the subset's identity includes its preprocessing and sizes: kappa_sweep runs a
        # context per centring fraction (and its own sizes) through one executor
        d = ctx.spec.data
        key = (d.name, d.centring, d.n_train, d.n_test, seed, sizes)
        if key not in self._data:
            n_train, n_test = sizes if sizes is not None else (None, None)
            self._data[key] = self.ray.put(ctx.dataset(seed=seed, n_train=n_train, n_test=n_test))
        return self._data[key]

    def run(
        self, ctx: RunContext, todo: list[tuple[int, Cell]]
    ) -> Iterator[tuple[CellOutcome, int]]:
        """Submit ``todo`` (plan index, cell) at most ``capacity`` at a time; yield each
        outcome as it completes, with the number of cells still in flight."""
        ray = self.ray
        self._start()
        cap = self._capacity()
        queue = list(reversed(todo))
        inflight: dict[Any, tuple[int, float]] = {}
        try:
            while queue or inflight:
                while queue and len(inflight) < cap:
                    i, c = queue.pop()
                    ref = self._remote.remote(
                        c.fn,
                        c.id,
                        c.args,
                        ctx.spec,
                        c.data_seed,
                        self._dataset_ref(ctx, c.data_seed, c.sizes),
                        self.es.cpus_per_cell,
                        c.sizes,
                    )
                    inflight[ref] = (i, time.perf_counter())
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=POLL_S)
                ctx.check_cancel()
                for ref in ready:
                    i, t0 = inflight.pop(ref)
                    yield self._outcome(ref, i, t0), len(inflight)
        except (Cancelled, KeyboardInterrupt):
            self._cancel(list(inflight))
            raise
        except GeneratorExit:  # the consumer stopped early: leave no task behind
            self._cancel(list(inflight))
            raise

    def _cancel(self, refs: list[Any]) -> None:
        """Force-cancel the tasks of ``refs`` that have not finished yet.

        Finished ones are left alone: cancelling a task while its result is being
        delivered can abort the driver in Ray (a ``RAY_CHECK`` on "complete task that was
        not pending", still in Ray 2.60); skipping the ready ones narrows that window.
        """
        if not refs:
            return
        ready, pending = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in pending:
            self.ray.cancel(ref, force=True)

    def _outcome(self, ref: Any, index: int, t0: float) -> CellOutcome:
        try:
            events, seconds, host = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None) or e
            return CellOutcome(
                index,
                error=(type(cause).__name__, _one_line(cause)),
                seconds=time.perf_counter() - t0,
            )
        except self.ray.exceptions.RayError as e:  # the worker died on every attempt, …
            return CellOutcome(
                index, error=(type(e).__name__, _one_line(e)), seconds=time.perf_counter() - t0
            )
        return CellOutcome(index, events=tuple(events), seconds=seconds, host=host)


def _one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return (lines[-1] if lines else type(e).__name__)[:300]


@contextlib.contextmanager
def _own_signal_handlers() -> Iterator[None]:
    """Keep this process's SIGTERM / SIGHUP / SIGINT handlers across ``ray.init``: Ray puts
    its own in their place (a ``sys.exit`` and a native stack dump "*** SIGTERM received"),
    so a terminated run would end "failed" instead of closing as "interrupted"."""
    names = ("SIGTERM", "SIGHUP", "SIGINT")
    sigs = [getattr(signal, n) for n in names if hasattr(signal, n)]
    main = threading.current_thread() is threading.main_thread()
    before = {sig: signal.getsignal(sig) for sig in sigs} if main else {}
    try:
        yield
    except SystemExit as e:  # Ray's handler ran (a signal during ``ray.init``): a stop
        if e.code in sigs:
            raise KeyboardInterrupt from None
        raise
    finally:
        for sig, handler in before.items():
            if handler is not None:  # None: set outside Python, nothing to restore
                signal.signal(sig, handler)


def _nodes(ray: Any) -> list[dict[str, float]]:
    """The resources of each live node of the cluster Ray is connected to."""
    return [dict(n.get("Resources", {})) for n in ray.nodes() if n.get("Alive")]


def check_resources(
    es: ExecutorSpec,
    nodes: list[dict[str, float]],
    where: str = "the largest node of the Ray cluster",
) -> None:
    """Refuse a cell no node can hold (Ray would queue it forever, without a word)."""
    if not nodes:
        return
    for key, field, want in (
        ("CPU", "cpus_per_cell", es.cpus_per_cell),
        ("GPU", "gpus_per_cell", es.gpus_per_cell),
    ):
        most = max(float(n.get(key, 0.0)) for n in nodes)
        if want > most:
            has = f"{most:g} {key}s" if most else f"no {key}"
            raise ConfigError(
                f"executor.{field}",
                want,
                f"at most {most:g}: {where} has {has} (a cell needs them on one node)",
            )
