"""Resume's one JSON codec: the TUI's SubprocessRunner writes it, the worker reads it."""

from __future__ import annotations

import json
import threading

import numpy as np

from engine.run.context import Resume


def test_resume_round_trips_through_json() -> None:
    r = Resume(
        frozenset({"b", "a"}),
        None,
        {"train": [{"width": 16, "train_loss": 0.5}]},
        {"eigenvalues": [{"eig_G": np.array([2.0, 1.0])}]},
    )
    wire = json.loads(json.dumps(r.to_json()))
    assert wire["done_cells"] == ["a", "b"]
    cancel = threading.Event()
    back = Resume.from_json(wire, cancel=cancel)
    assert back.done_cells == r.done_cells and back.cancel is cancel
    assert back.previous_rows == {"train": [{"width": 16, "train_loss": 0.5}]}
    assert back.previous_artifacts == {"eigenvalues": [{"eig_G": [2.0, 1.0]}]}
    assert Resume.from_json({"spec": {}}) == Resume()
