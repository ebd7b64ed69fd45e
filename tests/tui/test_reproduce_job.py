"""A reproduction started in the app: its parts run one after the other as ordinary runs,
the Claims panel's checklist fills in after each, cancel stops it like a headless job."""

from __future__ import annotations

import time
from pathlib import Path

from tui_support import canned_events, make_test_app, screen_text

from engine.reproduce.plan import plan
from engine.reproduce.presets import apply_quick
from engine.run.spec import RunSpec
from malleability_tui.app import reproduction_plan
from malleability_tui.dialogs.confirm_dialog import ConfirmDialog
from malleability_tui.runner import NOT_RUN, ReplayRunner, ThreadRunner

TINY = {
    "data__n_train": 60,
    "data__n_test": 20,
    "model__widths": (8, 16, 32, 64),
    "train__epochs": 5,
    "ntk__drift_points": 16,
    "landscape__width": 16,
    "landscape__points_1d": 5,
    "landscape__points_2d": 3,
    "landscape__hessian_iters": 3,
    "landscape__hutchinson_samples": 2,
    "flip__attacks": ("fgsm",),
    "flip__width": 16,
}


def _parts() -> list:
    return plan(("digits",), tables=(1, 3), seeds=(0,), device="cpu", overrides=TINY)


async def _until(pilot, done, timeout: float) -> None:
    t0 = time.monotonic()
    while not done() and time.monotonic() - t0 < timeout:
        await pilot.pause(0.1)


def test_the_plan_is_the_cli_reproduce_of_the_forms_data_set() -> None:
    quick = reproduction_plan(apply_quick(RunSpec(device="cpu")).replace(data__name="digits"))
    assert [p.key for p in quick] == ["digits-multiclass", "digits-binary", "digits-binary-gd"]
    assert all(p.spec.quick and p.spec.data.center for p in quick)
    full = reproduction_plan(RunSpec(device="cpu").replace(data__name="digits"))
    assert not any(p.spec.quick for p in full)
    assert full[0].spec.model.widths == RunSpec().model.widths


async def test_the_checklist_fills_in_after_each_part(tmp_path: Path) -> None:
    app = make_test_app(tmp_path, runner=ThreadRunner())
    parts = _parts()
    out = tmp_path / "runs" / "rep"

    def live() -> dict:
        return app.state.reproduction.get("summary") or {} if app.busy else {}

    async with app.run_test(size=(100, 30)) as pilot:
        app.start_reproduction(parts, out, datasets=["digits"], tables=[1, 3])
        second = str(out / "digits-binary")
        # the first part's comparison arrives before the second part opens its run: wait
        # for both (the second part takes seconds, the poll 0.1 s)
        await _until(
            pilot, lambda: (bool(live()) and app.state.run_dir == second) or not app.busy, 60
        )
        partial = live()  # the first part done, the second running
        assert app.state.run_dir == second
        assert partial["checklist"] and partial["table1"]
        assert any(NOT_RUN in str(c.get("reason")) for c in partial["table3"])
        table = app.main_query("#claims-table")
        assert table.row_count == len(partial["checklist"])
        # the second part's claim (3, on binary flips) is not decided yet, and says so
        shown = [str(table.get_row_at(i)[3]) for i in range(table.row_count)]
        assert NOT_RUN in shown, shown
        await _until(pilot, lambda: not app.busy, 60)
        await pilot.pause(0.3)
        assert (out / "summary.json").is_file()
        assert NOT_RUN not in str(app.state.reproduction["summary"])
        assert all((out / p.key / "spec.toml").is_file() for p in parts)
        # the end: the reproduction folder opened as one run, on the Claims panel
        assert app.state.reproduction["path"] == str(out)
        assert app.state.reproduction["summary"]["checklist"]
        assert app.main_query("TabbedContent").active == "claims"


async def test_cancel_stops_the_part_and_the_parts_after_it(tmp_path: Path) -> None:
    runner = ReplayRunner(canned_events(), pause_after=3)
    app = make_test_app(tmp_path, runner=runner)
    out = tmp_path / "runs" / "rep"
    async with app.run_test(size=(100, 30)) as pilot:
        app.start_reproduction(_parts(), out, datasets=["digits"], tables=[1, 3])
        await _until(pilot, runner.paused.is_set, 20)
        assert app.busy and app.state.reproduction["path"] == str(out)
        await pilot.press("c")
        await _until(pilot, lambda: not app.busy, 20)
        await pilot.pause(0.2)
        assert not app.busy
        assert not (out / "summary.json").exists()
        assert (out / "digits-multiclass").is_dir() and not (out / "digits-binary").exists()
        assert not app.check_action("cancel_job", ())


async def test_the_palette_action_asks_before_hours_of_the_paper_preset(tmp_path: Path) -> None:
    app = make_test_app(tmp_path)  # the form: digits, not the quick preset
    async with app.run_test(size=(100, 30)) as pilot:
        app.action_reproduce()
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        assert "reproduction is estimated" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not app.busy and not (tmp_path / "runs").exists()
