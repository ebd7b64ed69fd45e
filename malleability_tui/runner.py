"""The only bridge between engine jobs and Textual.

A runner executes a ``RunSpec`` off the UI thread, writes the run directory with
``RunStore`` and hands events to the app as messages. No widget is touched here:
a worker thread only appends to a thread-safe queue and posts messages
(``App.post_message`` is thread-safe). Messages coalesce: a ``JobPulse`` says
"events are waiting" and any later pulse replaces it (``can_replace``), and the
app drains the whole queue per pulse, so a fast job cannot flood the UI.

* ``SubprocessRunner`` (default): ``python -m engine.experiments.worker`` in a
  child process streaming JSON lines, so training never holds the UI's GIL.
* ``ThreadRunner``: ``engine.experiments.run`` in a Textual thread worker.
* ``ReplayRunner``: replays canned events (tests, demos); can pause mid-stream.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message

from engine.reproduce.claims import NOT_RUN
from engine.run.events import Event, Failed, Finished, Progress, from_json, to_jsonable
from engine.run.spec import RunSpec
from engine.run.store import RunStore

if TYPE_CHECKING:
    from textual.app import App

    from engine.run.context import Resume


class JobPulse(Message):
    """Events are waiting in the runner's queue (coalesced: one pending pulse is enough)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobPulse)


class JobProgress(Message):
    """Latest progress of ``task``; a newer one for the same task replaces it."""

    def __init__(self, event: Progress) -> None:
        super().__init__()
        self.event = event

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobProgress) and message.event.task == self.event.task


class JobEnded(Message):
    """The job is over: ``status`` finished / failed / cancelled / crashed."""

    def __init__(self, status: str, run_dir: str, error: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.status = status
        self.run_dir = run_dir
        self.error = error


class JobRunner:
    """Base runner: queue + store plumbing; subclasses implement ``_events``."""

    def __init__(self) -> None:
        self.queue: deque[Event] = deque()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self.run_dir: Path | None = None
        self.store: RunStore | None = None
        self.status: str | None = None
        """The last job's ``JobEnded`` status (None while one runs or before any)."""

    # -- used by the app (main thread) ------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(
        self,
        app: App,
        spec: RunSpec,
        run_dir: Path,
        *,
        resume: bool = False,
        before: Callable[[RunStore], None] | None = None,
    ) -> None:
        """Start ``spec`` writing ``run_dir``; returns at once. ``resume``: continue the run
        in ``run_dir``, keeping and skipping its finished cells (the CLI's ``--resume``).
        ``before(store)`` runs once the directory is open and before the job writes to it
        (the app reads the kept cells there)."""
        if self.running:
            raise RuntimeError("a job is already running")
        self._cancel = threading.Event()
        self.queue.clear()
        self.status = None
        self.run_dir = Path(run_dir)
        # Opened here so a bad folder or a live writer is refused in the UI, not the thread.
        self.store = RunStore(self.run_dir, spec, resume=resume)
        if before is not None:
            try:
                before(self.store)
            except BaseException:
                self.store.close("interrupted" if resume else "failed")
                raise
        self._thread = threading.Thread(
            target=self._work, args=(app, spec), name="malleability-job", daemon=True
        )
        self._thread.start()

    def cancel(self) -> None:
        """Ask the job to stop between events (it ends with Failed('Cancelled'))."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job thread ends; True if it did."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def drain(self) -> list[Event]:
        """Every queued event, oldest first (main thread)."""
        out = []
        while True:
            try:
                out.append(self.queue.popleft())
            except IndexError:
                return out

    # -- the job thread -------------------------------------------------------------------

    def _events(
        self,
        spec: RunSpec,
        *,
        resume: Resume,
    ) -> Iterator[Event]:  # pragma: no cover - abstract
        """The job's events (an ``engine.experiments.runner.EventSource``)."""
        raise NotImplementedError

    def _work(self, app: App, spec: RunSpec) -> None:
        from engine.experiments.runner import execute

        store = self.store
        assert store is not None and self.run_dir is not None
        outcome: dict[str, Any] = {"status": "crashed", "error": None}
        last_pulse = [0.0]

        def hand_over(ev: Event) -> None:
            if isinstance(ev, Progress):
                app.post_message(JobProgress(ev))
                return
            self.queue.append(ev)
            now = time.monotonic()
            # One pulse per ~20 ms at most: later ones would be coalesced anyway.
            if now - last_pulse[0] > 0.02 or isinstance(ev, (Finished, Failed)):
                app.post_message(JobPulse())
                last_pulse[0] = now
            if isinstance(ev, Finished):
                outcome["status"] = "finished"
            elif isinstance(ev, Failed):
                outcome["status"] = "cancelled" if ev.error == "Cancelled" else "failed"
                outcome["error"] = (ev.error, ev.message)

        try:
            # The same loop as the headless CLI: it writes every event and closes the store
            # (interrupted when the stream stops short, failed when it raises).
            execute(
                spec,
                self.run_dir,
                store=store,
                cancel=self._cancel,
                on_event=hand_over,
                source=self._events,
            )
        except Exception as e:  # noqa: BLE001 - a bug in a job must not kill the app
            outcome.update(status="failed", error=(type(e).__name__, str(e)))
            self.queue.append(Failed(type(e).__name__, str(e)))
        finally:
            self.status = outcome["status"]
            app.post_message(JobPulse())
            app.post_message(JobEnded(outcome["status"], str(self.run_dir), outcome["error"]))


class ThreadRunner(JobRunner):
    """``engine.experiments.run`` in this process, on a background thread."""

    def _events(
        self,
        spec: RunSpec,
        *,
        resume: Resume,
    ) -> Iterator[Event]:
        from engine.experiments.runner import run

        yield from run(spec, resume=resume)


class SubprocessRunner(JobRunner):
    """The job in ``python -m engine.experiments.worker``; events come back as JSON lines."""

    def __init__(self, python: str | None = None) -> None:
        super().__init__()
        self.python = python or sys.executable
        self.proc: subprocess.Popen[str] | None = None
        self.stderr_tail: deque[str] = deque(maxlen=40)

    def cancel(self) -> None:
        super().cancel()
        p = self.proc
        if p is not None and p.poll() is None and p.stdin is not None:
            try:
                p.stdin.write("cancel\n")
                p.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def _events(
        self,
        spec: RunSpec,
        *,
        resume: Resume,
    ) -> Iterator[Event]:
        import engine

        # The child must import the same engine even when the package is not installed.
        root = str(Path(engine.__file__).resolve().parents[1])
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self.proc = p = subprocess.Popen(
            [self.python, "-m", "engine.experiments.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
            env=env,
        )
        assert p.stdin and p.stdout and p.stderr
        threading.Thread(target=self._read_stderr, args=(p.stderr,), daemon=True).start()
        req = {"spec": to_jsonable(spec.to_dict()), **resume.to_json()}  # Resume.from_json
        p.stdin.write(json.dumps(req) + "\n")
        p.stdin.flush()
        if self._cancel.is_set():
            self.cancel()
        ended = False
        for line in p.stdout:
            try:
                ev = from_json(json.loads(line))
            except (json.JSONDecodeError, KeyError, TypeError):
                self.stderr_tail.append(line.rstrip())
                continue
            ended = ended or isinstance(ev, (Finished, Failed))
            yield ev
        p.wait()
        if not ended:
            tail = " | ".join(list(self.stderr_tail)[-3:])
            yield Failed("WorkerDied", f"the job process exited with status {p.returncode}: {tail}")

    def _read_stderr(self, stream: Iterable[str]) -> None:
        for line in stream:
            self.stderr_tail.append(line.rstrip())

    def wait(self, timeout: float | None = None) -> bool:
        ok = super().wait(timeout)
        if not ok and self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # it ignored the cancel request: stop it
            ok = super().wait(5)
        return ok


class ReplayRunner(JobRunner):
    """Replays ``events`` (tests, demos). ``pause_after``: block there until cancelled."""

    def __init__(
        self,
        events: list[Event],
        *,
        delay: float = 0.0,
        pause_after: int | None = None,
        write_store: bool = True,
    ) -> None:
        super().__init__()
        self.events = list(events)
        self.delay = delay
        self.pause_after = pause_after
        self.write_store = write_store
        self.started_spec: RunSpec | None = None
        self.paused = threading.Event()

    def start(self, app: App, spec: RunSpec, run_dir: Path, **kw: Any) -> None:
        self.started_spec = spec
        super().start(app, spec, run_dir, **kw)

    def _events(self, spec: RunSpec, *, resume: Resume) -> Iterator[Event]:
        """The canned events, less those of ``resume.done_cells`` (as the engine skips them)."""
        done = resume.done_cells
        for i, ev in enumerate(self.events):
            if getattr(ev, "cell", None) in done:
                continue
            if self._cancel.is_set():
                yield Failed("Cancelled", "the run was cancelled; finished cells are kept")
                return
            if self.pause_after is not None and i == self.pause_after:
                self.paused.set()
                self._cancel.wait(30)
                yield Failed("Cancelled", "the run was cancelled; finished cells are kept")
                return
            if self.delay:
                time.sleep(self.delay)
            yield ev


class PartStarted(Message):
    """A reproduction's part begins: its run directory, and the reproduction's plan."""

    def __init__(self, path: Path, key: str, run_dir: Path, spec: RunSpec, parts: list) -> None:
        super().__init__()
        self.path, self.key, self.run_dir, self.spec, self.parts = path, key, run_dir, spec, parts


class PartDone(Message):
    """A reproduction's part is over: the comparison of the parts finished so far (the
    others read "no data: not run yet")."""

    def __init__(self, key: str, comparison: dict[str, Any]) -> None:
        super().__init__()
        self.key, self.comparison = key, comparison


class ReproductionEnded(Message):
    """The reproduction is over: ``status`` finished / cancelled / failed (``error``)."""

    def __init__(self, status: str, path: Path, error: str = "") -> None:
        super().__init__()
        self.status, self.path, self.error = status, path, error


class ReproductionJob:
    """The paper's reproduction (``engine.reproduce.driver.reproduce_parts``) on a thread:
    each part is an ordinary run of ``runner`` (in-process or the worker), one after the
    other, into ``path/<part>``; after each, a ``PartDone`` with the partial comparison."""

    def __init__(self, runner: JobRunner) -> None:
        self.runner = runner
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def cancel(self) -> None:
        """Stop the running part (as a headless job's cancel) and run no further part."""
        self._cancel.set()
        self.runner.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def start(self, app: App, path: Path, parts: list, **meta: Any) -> None:
        """Run ``parts`` (``engine.reproduce.plan.plan``) into the new folder ``path``;
        ``meta``: ``reproduce_parts``'s datasets, tables, quick, estimated_seconds."""
        if self.running or self.runner.running:
            raise RuntimeError("a job is already running")
        self._cancel = threading.Event()
        self._thread = threading.Thread(
            target=self._work, args=(app, Path(path), parts, meta), daemon=True
        )
        self._thread.start()

    def _work(self, app: App, path: Path, parts: list, meta: dict[str, Any]) -> None:
        from engine.errors import Cancelled
        from engine.reproduce.compare import compare
        from engine.reproduce.driver import reproduce_parts
        from engine.reproduce.record import META
        from engine.run.runs import read_run
        from engine.run.validate import read_json_object

        runs: dict[str, dict[str, Any]] = {p.key: {"missing": NOT_RUN} for p in parts}

        def done(key: str) -> None:
            app.post_message(PartDone(key, compare(runs, parts)))

        def run_part(part: Any, sub: Path, again: bool) -> None:
            if self._cancel.is_set():
                raise Cancelled("the reproduction was cancelled; finished parts are kept")
            plan = read_json_object(path / META).get("parts") or []
            app.post_message(PartStarted(path, part.key, sub, part.spec, plan))
            self.runner.start(app, part.spec, sub, resume=again)
            self.runner.wait()
            if self.runner.status != "finished":
                raise Cancelled(f"{part.key}: {self.runner.status}")
            runs[part.key] = read_run(sub)
            done(part.key)

        def on_missing(part: Any, reason: str) -> None:
            runs[part.key] = {"missing": reason}
            done(part.key)

        try:
            reproduce_parts(
                path, parts, run_part=run_part, on_missing=on_missing, resume=False, **meta
            )
        except Cancelled as e:
            status = "cancelled" if self._cancel.is_set() else "failed"
            app.post_message(ReproductionEnded(status, path, str(e)))
        except Exception as e:  # noqa: BLE001 - a bug in a job must not kill the app
            app.post_message(ReproductionEnded("failed", path, f"{type(e).__name__}: {e}"))
        else:
            app.post_message(ReproductionEnded("finished", path))


def default_runner() -> JobRunner:
    """The runner the app uses when none is injected ($MALLEABILITY_RUNNER=thread for in-process)."""
    return (
        ThreadRunner() if os.environ.get("MALLEABILITY_RUNNER") == "thread" else SubprocessRunner()
    )


def describe(runner: Any) -> str:
    return {
        "SubprocessRunner": "subprocess",
        "ThreadRunner": "thread",
        "ReplayRunner": "replay",
    }.get(type(runner).__name__, type(runner).__name__)
