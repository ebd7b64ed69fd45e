"""``malleability-tui``: the console script's entry point and its error boundary, and the
start-up heap freeze (``freeze_startup_heap``)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from engine.errors import EngineError
from engine.run.spec import RunSpec
from malleability_tui.app import MalleabilityApp, make_app
from malleability_tui.settings import Settings


def freeze_startup_heap() -> None:
    """Take what start-up built out of the garbage collector's full passes.

    Start-up builds objects the collector tracks and that live as long as the app: the
    imports before the app runs (Textual, the engine: ~65,000 objects), then torch and the
    rest of the engine, imported as the panels first get their state, and Textual's own
    start-up. Python's full (generation 2) pass walked them all on the event loop: 179-186
    ms each, the slowest panel switch 219 ms (``python benchmarks/bench_tui_pty.py --frames
    40 --no-freeze``); frozen (``gc.freeze``) they are skipped: 9-10 ms, the slowest switch
    53 ms (the same without ``--no-freeze``). The objects the app makes later are collected
    as before. This freezes what the imports built, after collecting what they left as
    garbage (16-23 ms, once); the app freezes again after its first frame and after its
    first job has started (``Settings.freeze_heap``), the imports those bring included.
    """
    gc.collect()
    gc.freeze()


def main() -> None:
    """Console-script entry point of ``malleability-tui`` (optional argument: a run directory
    or a spec TOML). The front end's error boundary: a bad argument or an unexpected error
    is one line on stderr (a traceback goes to a log file) and a non-zero exit."""
    from malleability_tui.boundary import forget_caught_interrupt

    try:
        _main()
    finally:
        forget_caught_interrupt()


def _main() -> None:
    import sys

    from malleability_tui.boundary import (
        STOP_SIGNALS,
        error_line,
        sigterm_as_interrupt,
        terminal_problem,
        working_dir_problem,
    )

    s = Settings()
    app: MalleabilityApp | None = None
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(
            "usage: malleability-tui [RUN_DIR | SPEC.toml]   (runs folder: $MALLEABILITY_RUNS or ./runs)"
        )
        return
    try:
        if cwd_problem := working_dir_problem():
            raise EngineError(cwd_problem)
        if len(args) > 1:
            raise EngineError(
                f"one argument at most (a run directory or a spec .toml), got {len(args)}"
            )
        if args:
            p = Path(args[0])
            if (p / "spec.toml").exists() or (p / "reproduce.json").exists():
                s.open_run = str(p)
            elif p.is_dir():
                raise EngineError(
                    f"{p}: not a run directory (no spec.toml) nor a reproduction (no reproduce.json)"
                )
            elif not p.exists():
                raise EngineError(f"{p}: no such run directory or spec file")
            elif p.suffix == ".toml":
                s.spec = RunSpec.load(p)
            else:
                raise EngineError(f"{p}: a run directory or a spec .toml file expected")
        if why := terminal_problem():
            raise EngineError(
                f"malleability-tui needs an interactive terminal ({why}); "
                "for scripts use: malleability headless"
            )
        app = make_app(s)
        tui = app

        def stop(signum: int, frame: Any) -> None:
            # SIGTERM / SIGHUP: quit as the quit key does (a running job is cancelled and
            # its run closed), not a KeyboardInterrupt inside Textual's event loop
            import asyncio

            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # before or after the app's loop: the boundary below
                raise KeyboardInterrupt from None
            loop.call_soon_threadsafe(lambda: tui.exit(return_code=130))

        with sigterm_as_interrupt():
            import signal

            for sig in STOP_SIGNALS:
                signal.signal(sig, stop)
            freeze_startup_heap()
            app.settings.freeze_heap = True
            app.run()
    except KeyboardInterrupt:  # Ctrl-C outside Textual, SIGTERM, SIGHUP
        runner = app.runner if app is not None else None
        if runner is not None and runner.running:  # close its run, not leave it "running"
            runner.cancel()
            runner.wait(timeout=20)
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - the boundary: one line, never a traceback
        msg, code = error_line(e)
        print(f"error: {msg}", file=sys.stderr)
        sys.exit(code)
    if app.busy:  # quit by a signal while a job ran: let it close its run
        app.cancel_jobs()
        app.runner.wait(timeout=20)
    if app.return_code:
        if app.return_code == 130:
            print("interrupted", file=sys.stderr)
        sys.exit(app.return_code)


if __name__ == "__main__":
    main()
