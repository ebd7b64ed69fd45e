"""Issue #29: signals and Ray. SIGHUP (an SSH drop) closes a run like SIGTERM; SIGTERM
under Ray closes it "interrupted" without Ray's native stack dump; a Ray cell larger than
any node, or a cluster address where nothing answers, is one line before any run
directory exists, never a silent wait."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reliability_support import TINY, invoke, one_line_failure

from engine.errors import ConfigError
from engine.run.spec import ExecutorSpec

ROOT = Path(__file__).resolve().parents[2]
LONG = [a if a != "2" else "100000" for a in TINY]  # epochs: long enough to be caught running


def _start(run: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MALLEABILITY_LOG_DIR=str(run.parent / "logs"))
    return subprocess.Popen(
        [sys.executable, "-m", "malleability_tui.cli.main", "headless", *LONG, *extra],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(run: Path, text: str, p: subprocess.Popen, limit: float) -> None:
    deadline = time.monotonic() + limit
    ev = run / "events.jsonl"
    while time.monotonic() < deadline and p.poll() is None:
        if ev.exists() and text in ev.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared in {ev}")


def _stop(p: subprocess.Popen, sig: int) -> str:
    try:
        p.send_signal(sig)
        _, err = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return err


def _env_json(run: Path) -> dict:
    return json.loads((run / "env.json").read_text())


def test_sighup_closes_the_run_as_interrupted(tmp_path: Path) -> None:
    run = tmp_path / "run"
    p = _start(run, "--out", str(run))
    _wait_for(run, '"kind": "Progress"', p, 90)
    err = _stop(p, signal.SIGHUP)
    assert p.returncode == 130 and "Traceback" not in err, err
    env = _env_json(run)
    assert env["status"] == "interrupted" and env.get("end_time"), env
    assert not (run / ".lock").exists()


@pytest.mark.slow
def test_sigterm_under_ray_closes_as_interrupted_without_a_native_dump(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the [ray] extra is not installed")
    run = tmp_path / "run"
    p = _start(run, "--out", str(run), "--executor", "ray", "--seeds", "0,1")
    _wait_for(run, "cells to run on", p, 120)  # Ray is starting
    time.sleep(15)  # and up: the cells run (each one for minutes)
    err = _stop(p, signal.SIGTERM)
    assert "SIGTERM received" not in err and "PC: @" not in err, err
    assert p.returncode == 130, err
    assert _env_json(run)["status"] == "interrupted"


def test_a_cell_larger_than_any_node_is_refused() -> None:
    from engine.run.executors.ray import check_resources

    nodes = [{"CPU": 8.0}, {"CPU": 16.0, "GPU": 1.0}]
    check_resources(ExecutorSpec(kind="ray", cpus_per_cell=16, gpus_per_cell=1), nodes)
    with pytest.raises(ConfigError, match=r"cpus_per_cell=1000: at most 16"):
        check_resources(ExecutorSpec(kind="ray", cpus_per_cell=1000), nodes)
    with pytest.raises(ConfigError, match=r"gpus_per_cell=2.0: at most 1"):
        check_resources(ExecutorSpec(kind="ray", gpus_per_cell=2), nodes)
    with pytest.raises(ConfigError, match="has no GPU"):
        check_resources(ExecutorSpec(kind="ray", gpus_per_cell=1), [{"CPU": 4.0}])


@pytest.mark.parametrize(
    "flags, what",
    [
        (["--executor", "ray", "--cpus-per-cell", "1000"], "cpus_per_cell=1000: at most"),
        (["--executor", "ray", "--gpus-per-cell", "1"], "this machine (a local Ray) has no GPU"),
        (["--address", "127.0.0.1:1"], "a running Ray cluster"),
    ],
)
def test_ray_preflight_refuses_before_a_run_directory(sandbox, monkeypatch, flags, what) -> None:
    pytest.importorskip("ray", reason="the [ray] extra is not installed")
    import engine.run.executors as ex

    monkeypatch.setattr(ex, "_local_gpus", lambda: 0)
    t0 = time.monotonic()
    line = one_line_failure(invoke("headless", *TINY, "--out", sandbox / "r", *flags))
    assert what in line and time.monotonic() - t0 < 30
    assert not (sandbox / "r").exists()


def test_an_address_without_a_port_is_refused() -> None:
    from engine.run.executors import check_executor

    pytest.importorskip("ray", reason="the [ray] extra is not installed")
    with pytest.raises(ConfigError, match="host:port"):
        check_executor(ExecutorSpec(kind="ray", address="nohost"))
