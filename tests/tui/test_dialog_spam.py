"""Key spam on a path dialog (issue #29): Enter twice before the dialog is gone must not
pop the screen below it (ScreenStackError killed the TUI and its job with it)."""

from __future__ import annotations

from textual.widgets import Input, Label
from tui_support import make_test_app

from engine.run.spec import RunSpec
from malleability_tui.dialogs.path_dialog import PathDialog


async def test_enter_twice_in_a_path_dialog_saves_once_and_keeps_the_app(tmp_path):
    app = make_test_app(tmp_path)
    target = tmp_path / "saved.toml"
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f3")
        await pilot.pause()
        assert isinstance(app.screen, PathDialog)
        box = app.screen.query_one(Input)
        box.value = str(target)
        # two Enters queued before the first is handled (a burst over SSH)
        for _ in range(2):
            box.post_message(Input.Submitted(box, box.value))
        await pilot.pause()
        await pilot.pause()
        assert app.is_running and not isinstance(app.screen, PathDialog)
        assert len(app.screen_stack) == 1
    assert RunSpec.load(target).train.epochs > 0


async def test_save_spec_into_a_run_directory_is_refused_in_the_dialog(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").write_text("")
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f3")
        await pilot.pause()
        box = app.screen.query_one(Input)
        box.value = str(run / "spec.toml")
        box.post_message(Input.Submitted(box, box.value))
        await pilot.pause()
        assert isinstance(app.screen, PathDialog)  # stays open, saying why
        error = app.screen.query_one("#error", Label)
        assert error.display and "outside the run directory" in str(error.render())
        assert "\n" not in str(error.render())
    assert not (run / "spec.toml").exists()
