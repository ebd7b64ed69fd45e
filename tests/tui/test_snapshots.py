"""SVG snapshots (pytest-textual-snapshot): each panel at 120×40, the main screen at 80×24.

Deterministic: a canned run written to a fixed-name folder, fixed data-set choices,
no clock. Update with ``pytest tests/tui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import pytest
from tui_support import make_test_app, write_interrupted_run, write_run


def _app(tmp_path, open_run: bool = True):
    run = write_run(tmp_path / "runs" / "20250101-000000-all-digits")
    return make_test_app(tmp_path, open_run=str(run) if open_run else None)


def test_main_screen_80x24(snap_compare, tmp_path):
    assert snap_compare(_app(tmp_path, open_run=False), terminal_size=(80, 24))


@pytest.mark.parametrize("key", ["1", "2", "3", "4", "5", "6", "7"])
def test_panel_120x40(snap_compare, tmp_path, key):
    async def before(pilot):
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(_app(tmp_path), terminal_size=(120, 40), run_before=before)


@pytest.mark.parametrize("key", ["2", "3", "4", "5", "6"])
def test_plot_panel_80x24(snap_compare, tmp_path, key):
    """Every panel with plots also at the smallest supported terminal."""

    async def before(pilot):
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(_app(tmp_path), terminal_size=(80, 24), run_before=before)


def test_runs_interrupted_80x24(snap_compare, tmp_path, monkeypatch):
    """The Runs panel at 80×24 on an interrupted run: the resume hint and a footer that fits."""
    monkeypatch.chdir(tmp_path)  # the hint's path is relative to it: the same in every run
    write_run(tmp_path / "runs" / "20250101-000000-all-digits")
    write_interrupted_run(tmp_path / "runs" / "20250102-000000-all-digits")

    async def before(pilot):
        await pilot.pause()
        await pilot.press("7")
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_test_app(tmp_path), terminal_size=(80, 24), run_before=before)
