"""The driver side of executors, without Ray: plan order, failed cells, cancel, resume.

A scripted executor finishes cells in a chosen order (or fails them), so the driver's
contract is checked exactly: rows come out in plan order whatever the completion
order, a failed cell ends the run ``partial`` and ``--resume`` reruns only it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from engine.errors import Cancelled, ConfigError
from engine.run.context import Resume, RunContext
from engine.run.events import CellFailed, CellFinished, Event, Finished, Progress, TableRow
from engine.run.executors import Cell, CellOutcome, check_executor, run_cells
from engine.run.runs import read_run
from engine.run.spec import RunSpec
from engine.run.store import RunStore


def square_cell(ctx: RunContext, cell: str, k: int) -> Iterator[Event]:
    """A pure cell: one row that depends only on its input."""
    yield TableRow("squares", {"k": k, "k2": k * k}, cell=cell)


def _plan(n: int) -> list[Cell]:
    return [Cell(f"sq/{k}", square_cell, (k,), 0, f"k={k}") for k in range(n)]


class ScriptedExecutor:
    """Runs the cells inline but reports them in ``order``; cells in ``fail`` fail."""

    def __init__(
        self, order: list[int], fail: set[int] = frozenset(), cancel_after: int | None = None
    ):
        self.order, self.fail, self.cancel_after = order, fail, cancel_after

    def describe(self) -> str:
        return "scripted"

    def run(
        self, ctx: RunContext, todo: list[tuple[int, Cell]]
    ) -> Iterator[tuple[CellOutcome, int]]:
        cells = dict(todo)
        ranks = {i: r for r, i in enumerate(self.order)}
        for n, i in enumerate(sorted(cells, key=lambda i: ranks.get(i, i))):
            if self.cancel_after is not None and n == self.cancel_after:
                assert ctx.cancel is not None
                ctx.cancel.set()
            ctx.check_cancel()
            c = cells[i]
            if i in self.fail:
                yield CellOutcome(i, error=("RuntimeError", "boom")), len(cells) - n - 1
            else:
                yield CellOutcome(i, events=tuple(c.fn(ctx, c.id, *c.args))), len(cells) - n - 1


def _ctx(
    executor: object | None = None, *, done: set[str] = frozenset(), cancel=None
) -> RunContext:
    resume = Resume(done_cells=frozenset(done), cancel=cancel)
    return RunContext(RunSpec(device="cpu"), resume=resume, executor=executor)


def _drive(ctx: RunContext, plan: list[Cell], store: RunStore) -> list[Event]:
    evs: list[Event] = []
    try:
        for ev in run_cells(ctx, plan):
            store.write(ev)
            evs.append(ev)
    except Cancelled:
        store.close("cancelled")
        return evs
    store.write(Finished({}))
    return evs


def test_rows_in_plan_order_whatever_the_completion_order(tmp_path) -> None:
    local = list(run_cells(_ctx(), _plan(5)))
    remote = list(run_cells(_ctx(ScriptedExecutor([4, 2, 0, 3, 1])), _plan(5)))
    rows = [[e.row for e in evs if isinstance(e, TableRow)] for evs in (local, remote)]
    assert rows[0] == rows[1] == [{"k": k, "k2": k * k} for k in range(5)]
    assert [e.cell for e in remote if isinstance(e, CellFinished)] == [f"sq/{k}" for k in range(5)]
    sweep = [e for e in remote if isinstance(e, Progress)]
    assert [e.done for e in sweep] == [0, 1, 2, 3, 4, 5, 5]  # advances as cells complete
    assert [e.running for e in sweep[1:-1]] == [4, 3, 2, 1, 0]


def test_failed_cell_ends_partial_and_resume_reruns_only_it(tmp_path) -> None:
    spec = RunSpec(device="cpu")
    store = RunStore(tmp_path / "run", spec)
    evs = _drive(_ctx(ScriptedExecutor([0, 1, 2, 3], fail={2})), _plan(4), store)
    assert [e.cell for e in evs if isinstance(e, CellFailed)] == ["sq/2"]
    run = read_run(tmp_path / "run")
    assert run["env"]["status"] == "partial"
    assert run["summary"]["failed_cells"] == {"sq/2": "RuntimeError: boom"}
    assert [r["k"] for r in run["tables"]["squares"]] == ["0", "1", "3"]

    store2 = RunStore(tmp_path / "run", spec, resume=True)
    assert store2.done_cells == {"sq/0", "sq/1", "sq/3"}
    ran: list[int] = []

    class Recording(ScriptedExecutor):
        def run(self, ctx, todo):
            ran.extend(i for i, _ in todo)
            return super().run(ctx, todo)

    _drive(_ctx(Recording([0, 1, 2, 3]), done=store2.done_cells), _plan(4), store2)
    assert ran == [2]
    run = read_run(tmp_path / "run")
    assert run["env"]["status"] == "finished"
    assert sorted(int(r["k"]) for r in run["tables"]["squares"]) == [0, 1, 2, 3]


def test_cancel_keeps_every_finished_cell(tmp_path) -> None:
    store = RunStore(tmp_path / "run", RunSpec(device="cpu"))
    cancel = threading.Event()
    # cells 3 and 1 finish, then the user cancels: both are kept although 0 never ran
    evs = _drive(
        _ctx(ScriptedExecutor([3, 1, 0, 2], cancel_after=2), cancel=cancel), _plan(4), store
    )
    assert [e.cell for e in evs if isinstance(e, CellFinished)] == ["sq/1", "sq/3"]
    assert store.done_cells == {"sq/1", "sq/3"}
    assert read_run(tmp_path / "run")["env"]["status"] == "cancelled"


def test_local_executor_streams_and_skips_done_cells() -> None:
    evs = list(run_cells(_ctx(done={"sq/1"}), _plan(3)))
    assert [e.cell for e in evs if isinstance(e, CellFinished)] == ["sq/0", "sq/2"]


def test_executor_spec_validation() -> None:
    spec = RunSpec().replace(
        executor__kind="ray", executor__max_parallel=3, executor__address="h:6379"
    )
    assert RunSpec.from_toml(spec.to_toml()) == spec
    for field, bad in [
        ("kind", "dask"),
        ("cpus_per_cell", 0),
        ("max_parallel", -1),
        ("gpus_per_cell", -1.0),
        ("max_retries", True),
        ("address", "  "),
    ]:
        with pytest.raises(ConfigError, match=f"executor.{field}"):
            RunSpec().replace(**{f"executor__{field}": bad})


def test_ray_missing_gives_install_hint(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(ConfigError, match=r"the \[ray\] extra: pip install 'malleability\[ray\]'"):
        check_executor(RunSpec().executor.__class__(kind="ray"))
    check_executor(RunSpec().executor)  # local needs nothing


def test_reproduce_passes_executor_options_to_every_sub_run() -> None:
    from engine.reproduce.plan import plan
    from malleability_tui.cli.headless import executor_changes

    ex = executor_changes(
        {"executor": "ray", "address": "head:6379", "max_parallel": 4, "cpus_per_cell": 2,
         "gpus_per_cell": 0.5}
    )  # fmt: skip
    parts = plan(("digits",), quick=True, overrides=ex)
    assert len(parts) > 1
    for p in parts:
        e = p.spec.executor
        assert (e.kind, e.address, e.max_parallel, e.cpus_per_cell, e.gpus_per_cell) == (
            "ray",
            "head:6379",
            4,
            2,
            0.5,
        )
    assert executor_changes({"executor": None, "address": "h:1"})["executor__kind"] == "ray"


@pytest.mark.parametrize("command", ["headless", "reproduce"])
def test_cli_without_ray_prints_install_hint(monkeypatch, tmp_path, command) -> None:
    from typer.testing import CliRunner

    from malleability_tui.cli.main import app

    monkeypatch.setitem(sys.modules, "ray", None)
    args = [command, "--dataset", "digits", "--executor", "ray", "--out", str(tmp_path / "run")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code != 0
    assert "pip install 'malleability[ray]'" in res.output
    assert not (tmp_path / "run").exists()  # nothing created


def test_tui_status_bar_shows_cells_in_flight() -> None:
    from malleability_tui.state import RunState
    from malleability_tui.widgets.status_bar import StatusBar

    st = RunState()
    st.apply(Progress("sweep", 3, 12, "ntk m=16: 1.0 s; 2 in flight", running=2))
    bar = StatusBar()
    bar.status, bar.progress = "running", dict(st.progress)
    assert "cell 3/12 (2 in flight)" in bar.render().plain
    st.apply(Progress("sweep", 12, 12, "done"))
    bar.progress = dict(st.progress)
    assert "in flight" not in bar.render().plain
