"""The registry's LISTING: every experiment once, in run order, read without torch."""

from __future__ import annotations

import subprocess
import sys


def test_listing_is_the_registry_in_run_order() -> None:
    from engine.experiments.registry import LISTING, describe, experiments

    registered = experiments()
    assert list(registered) == list(LISTING) == [d["name"] for d in describe()]
    assert all(registered[n].description == d for n, d in LISTING.items())


def _imports_no_experiment(code: str) -> None:
    """Run ``code`` in a fresh interpreter: it imports neither torch nor an experiment."""
    check = (
        "import sys; bad=[m for m in ('torch','engine.experiments.train') if m in sys.modules];"
        "print(bad); sys.exit(bool(bad))"
    )
    r = subprocess.run([sys.executable, "-c", f"{code}; {check}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_describe_imports_no_experiment() -> None:
    _imports_no_experiment("from engine.experiments.registry import describe; describe()")


def test_checking_names_and_reading_a_spec_import_no_torch() -> None:
    """The TUI's form checks the experiment names and builds a RunSpec at start, and CLI
    commands read specs: neither imports an experiment or torch (1.1 s of import here:
    ``malleability data show digits`` took 2.9-3.4 s with it, 1.4-1.5 s without)."""
    _imports_no_experiment(
        "from engine.experiments.registry import check_names;"
        "from engine.run.spec import RunSpec;"
        "assert check_names('all')[0] == 'train' and check_names('flip, ntk') == ['flip', 'ntk'];"
        "RunSpec().replace(flip__intervention='curated')"
    )


def test_check_names_refuses_what_select_refuses() -> None:
    import pytest

    from engine.errors import ConfigError
    from engine.experiments.registry import LISTING, check_names, select

    for bad in ("", "nope", "train,nope", " , "):
        with pytest.raises(ConfigError) as a:
            check_names(bad)
        with pytest.raises(ConfigError) as b:
            select(bad)
        assert str(a.value) == str(b.value)
        assert all(n in str(a.value) for n in LISTING)
    assert [e.name for e in select("ntk,train,ntk")] == check_names("train,ntk")
