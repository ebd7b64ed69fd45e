"""Executors: where the cells of a sweep run (docs/guide.md#ray).

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

from engine.errors import ConfigError, needs_extra
from engine.run.executors.base import Cell, CellOutcome, run_cells

if TYPE_CHECKING:
    from engine.run.spec import ExecutorSpec

RAY_HINT = "Ray is not installed here: " + needs_extra("ray", "--executor ray")


CONNECT_TIMEOUT_S = 5.0
"""How long ``check_executor`` waits for a Ray cluster's address to answer."""


def check_executor(es: ExecutorSpec) -> None:
    """Fail early (before a run directory exists) when the executor cannot run here: Ray
    missing, a cell larger than this machine (a local Ray), a cluster address where nothing
    answers (Ray itself would retry for minutes). A cluster's own resources are checked
    once connected (``RayExecutor``)."""
    if es.kind != "ray":
        return
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ConfigError("executor", "ray", RAY_HINT) from None
    if es.address is None:
        import os

        from engine.run.executors.ray import check_resources

        here = {"CPU": float(os.cpu_count() or 1), "GPU": float(_local_gpus())}
        check_resources(es, [here], "this machine (a local Ray)")
    else:
        _check_reachable(es.address)


def _local_gpus() -> int:
    """The GPUs a local Ray would find (CUDA devices torch sees)."""
    try:
        import torch

        return int(torch.cuda.device_count())
    except Exception:  # noqa: BLE001 - a broken CUDA install: no GPU for Ray either
        return 0


def unreachable(host: str, port: int, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why a TCP connection to ``host:port`` fails within ``timeout`` seconds ("Connection
    refused", "no answer within 5 s"), or None when it opens: the pre-flight check of a
    Ray cluster's address and of an MLflow server, before any work starts."""
    import socket

    try:
        with socket.create_connection((host.strip("[]"), port), timeout=timeout):
            return None
    except (OSError, OverflowError) as e:
        if isinstance(e, TimeoutError):
            return f"no answer within {timeout:g} s"
        return getattr(e, "strerror", None) or str(e)


def _check_reachable(address: str) -> None:
    """A TCP connection to ``host:port`` (or ``ray://host:port``) within CONNECT_TIMEOUT_S."""
    addr = address.strip()
    if addr in ("auto", "local"):
        return
    hostport = addr.split("://", 1)[1] if "://" in addr else addr
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ConfigError(
            "executor.address", address, "host:port of a Ray head node, ray://host:port or auto"
        )
    why = unreachable(host, int(port))
    if why is not None:
        raise ConfigError(
            "executor.address",
            address,
            f"a running Ray cluster ({why}; start one with: ray start --head)",
        )


def make_executor(es: ExecutorSpec) -> Any:
    """The executor object for ``es`` (None for ``local``: ``run_cells`` runs cells inline)."""
    if es.kind == "local":
        return None
    check_executor(es)
    from engine.run.executors.ray import RayExecutor

    return RayExecutor(es)


__all__ = ["RAY_HINT", "Cell", "CellOutcome", "check_executor", "make_executor", "run_cells"]
