"""``python -m engine.experiments.worker``: run a spec in a child process, events as JSON lines.

Protocol (used by the TUI so training never competes with the UI for the GIL):

* stdin, first line: ``{"spec": RunSpec.to_dict(), "done_cells": [...], "previous_rows":
  {table: [row, ...]}, "previous_artifacts": {name: [data, ...]}}`` (a resumed run: its
  finished cells, skipped, and their rows and artifacts, which the summaries cover);
  any later line ``cancel`` (or stdin closing) sets the cancel flag, so the run
  stops between events and ends with ``Failed("Cancelled", ...)``.
* stdout: one ``Event.to_json()`` object per line, flushed per event; the stream
  always ends with a ``Finished`` or ``Failed`` line.
* An unexpected exception becomes ``Failed(<class name>, <message>)`` (traceback on
  stderr) and exit status 1.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
from typing import IO

WORKER_NICE = 5
"""The TUI's job runs this much nicer than the app, so a key is answered while it trains
(``benchmarks/bench_tui_pty.py --nice N`` measures the choice); an idle app costs it nothing."""


def _watch_stdin(stream: IO[str], cancel: threading.Event) -> None:
    for line in stream:
        if line.strip() == "cancel":
            break
    cancel.set()


def main() -> int:
    from engine.experiments.runner import run
    from engine.run.context import Resume
    from engine.run.events import Failed
    from engine.run.spec import RunSpec

    out = sys.stdout
    nice = os.environ.get("MALLEABILITY_WORKER_NICE", str(WORKER_NICE))
    if nice != "0":
        # Below the UI's priority, so the TUI's thread wins the CPU while training uses it all.
        try:
            os.nice(int(nice))
        except (OSError, ValueError, AttributeError):  # not on this platform / not allowed
            pass
    first = sys.stdin.readline()
    cancel = threading.Event()
    try:
        req = json.loads(first)
        spec = RunSpec.from_dict(req["spec"])
        resume = Resume.from_json(req, cancel=cancel)
    except Exception as e:  # noqa: BLE001 - reported on the protocol, not raised
        out.write(json.dumps(Failed(type(e).__name__, f"bad worker request: {e}").to_json()) + "\n")
        out.flush()
        return 2
    threading.Thread(target=_watch_stdin, args=(sys.stdin, cancel), daemon=True).start()
    try:
        for ev in run(spec, resume=resume):
            out.write(json.dumps(ev.to_json()) + "\n")
            out.flush()
    except Exception as e:  # noqa: BLE001 - a bug: keep the stream well-formed
        traceback.print_exc(file=sys.stderr)
        out.write(json.dumps(Failed(type(e).__name__, str(e)).to_json()) + "\n")
        out.flush()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
