"""``python -m engine.experiments.worker``: the TUI's job process and its JSON-lines protocol."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from engine.run.spec import RunSpec

ROOT = Path(__file__).resolve().parents[3]


def test_worker_skips_done_cells_and_summarises_their_rows():
    spec = RunSpec(experiment="train", seeds=(0,), device="cpu").replace(
        data__n_train=40, data__n_test=20, model__widths=(4, 8), train__epochs=2
    )
    done = "train/digits/relu/4/0"
    prev = {
        "model": "2L-ReLU",
        "dataset": "digits",
        "width": 4,
        "seed": 0,
        "training": "standard",
        "epochs": 2,
        "train_loss": 0.5,
        "train_accuracy": 0.5,
        "test_loss": 0.5,
        "test_accuracy": 0.987,
        "seconds": 0.1,
        "converged": True,
        "above_chance": True,
        "epochs_run": 2,
        "stuck": False,
    }
    req = {"spec": spec.to_dict(), "done_cells": [done], "previous_rows": {"train": [prev]}}
    env = dict(os.environ, PYTHONPATH=str(ROOT), MALLEABILITY_WORKER_NICE="0")
    p = subprocess.Popen(
        [sys.executable, "-m", "engine.experiments.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(json.dumps(req) + "\n")
    p.stdin.flush()  # kept open: closing stdin means "cancel"
    events = []
    for line in p.stdout:
        events.append(json.loads(line))
        if events[-1]["kind"] in ("Finished", "Failed"):
            break
    p.stdin.close()
    assert p.wait(60) == 0, p.stderr.read() if p.stderr else ""
    assert events[-1]["kind"] == "Finished", events[-1]
    cells = {e["cell"] for e in events if e["kind"] == "CellFinished"}
    assert done not in cells and len(cells) == 3
    (summary,) = [e for e in events if e["kind"] == "Summary" and e["section"] == "train"]
    assert summary["data"]["best_test_accuracy"]["2L-ReLU"] == 0.987  # the kept row counts
