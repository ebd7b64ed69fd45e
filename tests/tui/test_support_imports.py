"""The TUI tests' helpers import by a name of their own, so test folders mix."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_test_module_imports_conftest():
    """``from conftest import ...`` binds whichever conftest.py pytest imported last, so
    ``pytest tests/tui/test_format.py tests/reliability`` failed; helpers live in
    ``tui_support.py`` (or fixtures) instead."""
    bad = [
        str(p.relative_to(TESTS))
        for p in TESTS.rglob("*.py")
        if any(
            ln.strip().startswith(("from conftest import", "import conftest"))
            for ln in p.read_text(encoding="utf-8").splitlines()
        )
    ]
    assert bad == []
