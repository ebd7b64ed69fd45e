"""The registry's LISTING: every experiment once, in run order, read without torch."""

from __future__ import annotations

import subprocess
import sys


def test_listing_is_the_registry_in_run_order() -> None:
    from engine.experiments.registry import LISTING, describe, experiments

    registered = experiments()
    assert list(registered) == list(LISTING) == [d["name"] for d in describe()]
    assert all(registered[n].description == d for n, d in LISTING.items())


def test_describe_imports_no_experiment() -> None:
    code = (
        "import sys; from engine.experiments.registry import describe; describe();"
        "bad=[m for m in ('torch','engine.experiments.train') if m in sys.modules];"
        "print(bad); sys.exit(bool(bad))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
