"""Output paths checked before any work; one writer per run directory; SIGTERM; the crash boundary."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
from reliability_support import TINY, dead_pid, invoke, one_line_failure, tree

from engine.run.lock import RunInProgress, RunLock
from engine.run.spec import RunSpec
from engine.run.store import RunStore

ROOT = Path(__file__).resolve().parents[2]


def test_out_paths(sandbox: Path) -> None:
    (sandbox / "file").write_text("x")
    cases = {
        sandbox / "file": "a folder (this is a file)",
        Path("/dev/null"): "this is a file",
        sandbox / "file" / "below": "is a file",
        sandbox / ("n" * 300): "at most",
    }
    before = tree(sandbox)
    for out, what in cases.items():
        assert what in one_line_failure(invoke("headless", *TINY, "--out", out)), out
    assert tree(sandbox) == before


def test_file_and_folder_targets(run_copy: Path, sandbox: Path) -> None:
    (sandbox / "adir").mkdir()
    (sandbox / "afile").write_text("x")
    before = tree(sandbox)
    cases = [
        (["report", run_copy, "--to", sandbox / "adir"], "this is a folder"),
        (["report", run_copy, "--to", sandbox / "missing" / "r.md"], "does not exist"),
        (["headless", *TINY, "--save-config", sandbox / "adir"], "this is a folder"),
        (["headless", *TINY, "--save-config", sandbox / "missing" / "c.toml"], "does not exist"),
        (["export", run_copy, "--to", sandbox / "afile"], "this is a file"),
        (["export", run_copy, "--to", run_copy], "outside the run directory"),
        (["export", run_copy, "--to", sandbox / "adir" / ("x" * 300)], "at most"),
    ]
    if _has_matplotlib():
        cases.append((["figures", run_copy, "--to", sandbox / "afile"], "this is a file"))
    for args, what in cases:
        assert what in one_line_failure(invoke(*args)), args
    assert tree(sandbox) == before


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_export_never_mixes_runs(good_run: Path, sandbox: Path) -> None:
    import shutil

    a, b = sandbox / "runs" / "a", sandbox / "runs" / "b"
    shutil.copytree(good_run, a)
    shutil.copytree(good_run, b)
    assert invoke("export", a).exit_code == 0 and invoke("export", b).exit_code == 0
    assert (sandbox / "export" / "a" / "train.csv").is_file()
    assert (sandbox / "export" / "b" / "train.csv").is_file()
    assert "--force" in one_line_failure(invoke("export", a, "--to", sandbox / "export" / "b"))
    assert invoke("export", a, "--to", sandbox / "export" / "b", "--force").exit_code == 0


def test_second_writer_refused_and_stale_lock_taken_over(sandbox: Path) -> None:
    run = sandbox / "r"
    first = RunStore(run, RunSpec())
    with pytest.raises(RunInProgress, match=rf"run in progress \(pid {os.getpid()} on "):
        RunStore(run, RunSpec(), resume=True)
    with pytest.raises(RunInProgress):
        RunStore(run, RunSpec())  # a new writer racing for the same folder
    first.close("finished")
    assert not (run / ".lock").exists()
    # a lock left by a dead writer on this host is taken over, with a note
    (run / ".lock").write_text(json.dumps({"pid": dead_pid(), "host": socket.gethostname()}))
    store = RunStore(run, RunSpec(), resume=True)
    assert store.notes and "stale lock" in store.notes[0]
    store.close("finished")
    # another host's lock is not second-guessed
    (run / ".lock").write_text(json.dumps({"pid": 1, "host": "elsewhere.invalid"}))
    with pytest.raises(RunInProgress, match="elsewhere.invalid"):
        RunLock(run).acquire()


def test_resume_needs_a_run_directory(sandbox: Path) -> None:
    (sandbox / "stuff").mkdir()
    (sandbox / "stuff" / "notes.txt").write_text("mine")
    before = tree(sandbox)
    assert "spec.toml" in one_line_failure(
        invoke("headless", "--resume", "--out", sandbox / "stuff")
    )
    assert "spec.toml" in one_line_failure(
        invoke("headless", "--resume", "--out", sandbox / "nothing")
    )
    assert tree(sandbox) == before


def test_default_run_dirs_are_claimed_atomically(sandbox: Path) -> None:
    from engine.run.store import default_run_dir

    spec = RunSpec()
    dirs = {default_run_dir(spec) for _ in range(5)}
    assert len(dirs) == 5 and all(d.is_dir() for d in dirs)


def test_live_run_locks_out_resume_and_sigterm_interrupts(sandbox: Path) -> None:
    """A real writer in a subprocess: --resume is refused while it runs; SIGTERM closes it as
    interrupted (exit 130, lock gone), after which --resume is accepted."""
    run = sandbox / "live"
    args = [a if a != "2" else "100000" for a in TINY]  # epochs: long enough to be caught running
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [sys.executable, "-m", "malleability_tui.cli.main", "headless", *args, "--out", str(run)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (run / "events.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (run / ".lock").exists(), p.stderr.read() if p.poll() is not None else "no lock"
        line = one_line_failure(invoke("headless", "--resume", "--out", run))
        assert f"run in progress (pid {p.pid} on {socket.gethostname()})" in line
        assert p.poll() is None  # the first writer keeps going
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130 and "Traceback" not in err, err
    assert json.loads((run / "env.json").read_text())["status"] == "interrupted"
    assert not (run / ".lock").exists()


def test_unexpected_error_is_one_line_and_a_log(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engine.run.runs as runs  # the CLI imports it when the command runs

    def boom(root: Path) -> list:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(runs, "list_runs", boom)
    line = one_line_failure(invoke("runs", "list"))
    assert "internal error RuntimeError: simulated bug" in line
    logs = list((sandbox / "logs").glob("crash-*.log"))
    assert len(logs) == 1 and str(logs[0]) in line
    assert "Traceback" in logs[0].read_text() and "simulated bug" in logs[0].read_text()


_STRING_EXEC_INTERRUPT = {
    # an interrupt that lands inside a string exec, as a SIGTERM does while dataclasses
    # build methods during torch's import; both front ends catch it and choose 130
    "cli": """
from malleability_tui.cli import main as cli

@cli.app.command("boom")
def boom() -> None:
    exec("raise KeyboardInterrupt", {})

cli.main()
""",
    "tui": """
import sys
from malleability_tui import boundary, launch

def interrupted() -> None:
    exec("raise KeyboardInterrupt", {})

boundary.terminal_problem = interrupted
sys.argv = ["malleability-tui"]
launch.main()
""",
}


@pytest.mark.parametrize("front", sorted(_STRING_EXEC_INTERRUPT))
def test_interrupt_inside_a_string_exec_still_exits_130(tmp_path: Path, front: str) -> None:
    """Under ``python -m`` CPython ends a process by SIGINT (-2) when a caught
    KeyboardInterrupt once left a string exec; the front ends exit 130 all the same."""
    (tmp_path / "front_probe.py").write_text(_STRING_EXEC_INTERRUPT[front])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    args = [sys.executable, "-m", "front_probe"] + (["boom"] if front == "cli" else [])
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 130, (p.returncode, p.stderr)
    assert "interrupted" in p.stderr and "Traceback" not in p.stderr, p.stderr


class _Thing:
    pass


def _drop_in_a_callback(raise_it: Any) -> Any:
    """Run ``raise_it`` in a weakref callback, where Python drops what it raises (as it does
    a KeyboardInterrupt that a signal raises while modules import); the weak reference."""
    thing = _Thing()
    ref = weakref.ref(thing, lambda _: raise_it())
    del thing  # the callback runs here
    return ref


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_an_interrupt_lost_in_a_callback_is_sent_again(stop: str) -> None:
    """A KeyboardInterrupt dropped in a callback is sent again inside the boundary, so the
    block still ends by KeyboardInterrupt, and nothing is printed for the lost one."""
    from malleability_tui import boundary

    def lost() -> None:
        if stop == "SIGTERM":
            boundary._sigterm(signal.SIGTERM, None)  # as the handler does: records, raises
        raise KeyboardInterrupt

    seen: list[Any] = []
    before = sys.unraisablehook
    passed_on = seen.append
    sys.unraisablehook = passed_on  # what the boundary passes on: nothing, here
    # Ctrl-C raises here however pytest was started: a shell starts a background job with
    # SIGINT ignored, and the resent SIGINT was then dropped (the test failed that way).
    sigint = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), boundary.sigterm_as_interrupt():
            ref = _drop_in_a_callback(lost)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the signal comes again, and ends this
                time.sleep(0.01)
        assert ref() is None and seen == []
        assert sys.unraisablehook is passed_on  # the block put the hook back
    finally:
        sys.unraisablehook = before
        signal.signal(signal.SIGINT, sigint)


def test_a_lost_interrupt_is_not_sent_once_the_block_has_ended() -> None:
    """The boundary's resend is for its own block: a Ctrl-C dropped just before the block
    ends is not re-raised after it (where the command's cleanup or exit runs)."""
    from malleability_tui import boundary

    def lost() -> None:
        raise KeyboardInterrupt

    sigint = signal.signal(signal.SIGINT, signal.default_int_handler)  # as above
    try:
        with boundary.sigterm_as_interrupt():
            ref = _drop_in_a_callback(lost)  # the resend would be due 50 ms later, after it
        time.sleep(0.5)  # a KeyboardInterrupt here fails the test
    finally:
        signal.signal(signal.SIGINT, sigint)
    assert ref() is None
