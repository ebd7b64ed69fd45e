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
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message

from engine.experiments.events import Event, Failed, Finished, Progress, from_json
from engine.experiments.spec import RunSpec
from engine.experiments.store import RunStore

if TYPE_CHECKING:
    from textual.app import App


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

    # -- used by the app (main thread) ------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, app: App, spec: RunSpec, run_dir: Path) -> None:
        """Start ``spec`` writing ``run_dir``; returns at once."""
        if self.running:
            raise RuntimeError("a job is already running")
        self._cancel = threading.Event()
        self.queue.clear()
        self.run_dir = Path(run_dir)
        self.store = RunStore(self.run_dir, spec)  # created here so a bad folder fails in the UI
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

    def _events(self, spec: RunSpec) -> Iterator[Event]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _work(self, app: App, spec: RunSpec) -> None:
        store = self.store
        assert store is not None and self.run_dir is not None
        status, error = "crashed", None
        last_pulse = 0.0
        try:
            for ev in self._events(spec):
                store.write(ev)
                if isinstance(ev, Progress):
                    app.post_message(JobProgress(ev))
                    continue
                self.queue.append(ev)
                now = time.monotonic()
                # One pulse per ~20 ms at most: later ones would be coalesced anyway.
                if now - last_pulse > 0.02 or isinstance(ev, (Finished, Failed)):
                    app.post_message(JobPulse())
                    last_pulse = now
                if isinstance(ev, Finished):
                    status = "finished"
                elif isinstance(ev, Failed):
                    status = "cancelled" if ev.error == "Cancelled" else "failed"
                    error = (ev.error, ev.message)
        except Exception as e:  # noqa: BLE001 - a bug in a job must not kill the app
            status, error = "failed", (type(e).__name__, str(e))
            self.queue.append(Failed(type(e).__name__, str(e)))
        finally:
            # Idempotent: Finished/Failed already closed it; anything else was cut short.
            store.close(status if status in ("finished", "failed", "cancelled") else "interrupted")
            app.post_message(JobPulse())
            app.post_message(JobEnded(status, str(self.run_dir), error))


class ThreadRunner(JobRunner):
    """``engine.experiments.run`` in this process, on a background thread."""

    def _events(self, spec: RunSpec) -> Iterator[Event]:
        from engine.experiments.runner import run

        yield from run(spec, cancel=self._cancel)


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

    def _events(self, spec: RunSpec) -> Iterator[Event]:
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
        p.stdin.write(json.dumps({"spec": spec.to_dict(), "done_cells": []}) + "\n")
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

    def start(self, app: App, spec: RunSpec, run_dir: Path) -> None:
        self.started_spec = spec
        super().start(app, spec, run_dir)

    def _events(self, spec: RunSpec) -> Iterator[Event]:
        for i, ev in enumerate(self.events):
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
