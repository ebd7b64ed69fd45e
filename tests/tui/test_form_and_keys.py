"""The setup form on first use, run-time confirmation, keys in text fields, small fixes."""

from __future__ import annotations

import re
import sys

import pytest
from textual import events
from textual.widgets import Input, Label, Select, TabbedContent
from tui_support import (
    canned_events,
    footer_text,
    make_test_app,
    run_dirs,
    screen_text,
    wait_job,
    write_run,
)

from engine.reproduce.presets import QUICK
from engine.run.events import Progress
from engine.run.spec import RunSpec
from malleability_tui.dialogs.confirm_dialog import ConfirmDialog
from malleability_tui.dialogs.error_dialog import ErrorDialog
from malleability_tui.runner import ReplayRunner
from malleability_tui.screens.compare import CompareScreen, compare_rows
from malleability_tui.screens.help import HELP, HelpScreen
from malleability_tui.state import load_run_state


def _field(app, key: str) -> str:
    return app.query_one(f"#f-{key}", Input).value


def _error(app, key: str) -> str:
    lab = app.query_one(f"#err-{key}", Label)
    return str(lab.content) if lab.has_class("-show") else ""


async def _settle(pilot, app) -> None:
    """Let the form's class-count reader (a thread) report back."""
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_first_launch_opens_on_the_quick_preset_and_paper_is_one_key_away(tmp_path):
    app = make_test_app(tmp_path, spec=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert (_field(app, "widths"), _field(app, "epochs"), _field(app, "seeds")) == (
            "16,32,64,256,1024",
            str(QUICK["train__epochs"]),
            "0",
        )
        await pilot.press("f6")
        await pilot.pause()
        assert _field(app, "epochs") == "500" and _field(app, "seeds") == "0,1,2"
        assert _field(app, "widths").startswith("4,8,16") and _field(app, "n_train") == "1000"
        await pilot.press("f4")
        await pilot.pause()
        assert _field(app, "epochs") == str(QUICK["train__epochs"])


async def test_later_launches_keep_the_paper_defaults(tmp_path):
    write_run(tmp_path / "runs" / "20250101-000000-all-digits")
    app = make_test_app(tmp_path, spec=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert _field(app, "epochs") == "500"


async def test_a_long_run_asks_first_with_its_estimate(tmp_path):
    runner = ReplayRunner(canned_events())
    app = make_test_app(tmp_path, runner, spec=RunSpec(device="cpu"))  # the paper's spec
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot, app)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        assert re.search(r"estimated at ≈ \d+h\d\dm", screen_text(app))
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmDialog) and runner.started_spec is None
        assert not run_dirs(tmp_path)
        await pilot.press("ctrl+r")
        await pilot.pause()
        await pilot.press("enter")
        await wait_job(pilot, app)
        assert runner.started_spec is not None and runner.started_spec.train.epochs == 500


async def test_a_short_run_starts_at_once(tmp_path):
    runner = ReplayRunner(canned_events())
    app = make_test_app(tmp_path, runner)  # SPEC: seconds
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot, app)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmDialog) and runner.started_spec is not None
        await wait_job(pilot, app)


async def test_classes_and_sizes_are_checked_against_the_data_set_as_you_type(tmp_path):
    runner = ReplayRunner(canned_events())
    app = make_test_app(tmp_path, runner)
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one("#f-classes", Input).value = "3,11"
        await _settle(pilot, app)
        assert "no class 11" in _error(app, "classes")
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert runner.started_spec is None  # the run is refused before it starts
        app.query_one("#f-classes", Input).value = "3,8"
        app.query_one("#f-n_train", Input).value = "2000"
        await _settle(pilot, app)
        assert _error(app, "classes") == ""
        assert "lower n_train" in _error(app, "n_train")
        app.query_one("#f-n_train", Input).value = "200"
        await _settle(pilot, app)
        assert _error(app, "n_train") == "" and app.query_one("#setup-form").errors == {}
        # A data dir is the loader's first stop for a data set on disk (digits is built in).
        app.query_one("#f-dataset", Select).value = "mnist"
        app.query_one("#f-data_dir", Input).value = str(tmp_path / "nowhere")
        await _settle(pilot, app)
        assert "does not exist" in _error(app, "data_dir")
        app.query_one("#f-data_dir", Input).value = ""
        await _settle(pilot, app)
        assert _error(app, "data_dir") == ""


async def test_long_errors_wrap(tmp_path):
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        long = "a data set that cannot be read because " + "x" * 30 + " and more words END1"
        app.show_error("The run failed: " + "DatasetError " * 6 + "END2", long)
        await pilot.pause()
        text = screen_text(app)
        assert "END1" in text and "END2" in text
        app.query_one(ErrorDialog).is_open = False
        app.query_one("#f-classes", Input).value = "3,11"
        await _settle(pilot, app)
        assert "9 (9)" in screen_text(app)  # the end of the two-line message under the field


async def test_plain_keys_type_in_text_fields_and_the_footer_says_so(tmp_path):
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = await footer_text(pilot, app)
        assert "r Run" in footer and "q Quit" in footer
        inp = app.query_one("#f-epochs", Input)
        blurred = inp.styles.background
        inp.focus()
        await pilot.pause()
        assert inp.styles.background != blurred  # a visible focus style
        await pilot.press("end", "?", "q", "2", "r", "e", "s", "c")
        await pilot.pause()
        assert inp.value == "5?q2resc" and app.is_running
        assert app.query_one(TabbedContent).active == "setup" and not isinstance(
            app.screen, HelpScreen
        )
        footer = await footer_text(pilot, app)
        assert "^r Run" in footer and "F1 Help" in footer and "esc Leave field" in footer
        assert "c Cancel" not in footer and "1-8" not in footer
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("escape")  # leave the field: the plain keys work again
        await pilot.pause()
        assert "r Run" in await footer_text(pilot, app)
        await pilot.press("2")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "sweep"


async def test_a_key_burst_after_q_is_no_traceback(tmp_path):
    for burst in ("qe", "qs", "q?", "qr"):
        run = write_run(tmp_path / burst / "runs" / "20250101-000000-all-digits")
        app = make_test_app(tmp_path / burst, open_run=str(run))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("escape")
            for k in burst:  # arriving together (a paste, fast typing over SSH)
                app.post_message(events.Key(k, k))
            await pilot.pause(0.3)
        assert app._exception is None and app.return_code == 0, burst


async def test_help_fits_80x24(tmp_path):
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        text = screen_text(app)
        for line in HELP.splitlines():  # every line whole: nothing wrapped or cut
            plain = re.sub(r"\[/?b\]", "", line).replace("\\[", "[").strip()
            assert plain in text, plain
        # the palette's entries that no key starts are named (the reproduction's)
        assert "only there: Reproduce the paper" in text
        assert "1-8 panels" in text and "Claims" in text


async def test_screenshot_leaves_the_toasts_out(tmp_path):
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.press("escape")
        app.notify("TOASTY earlier message")
        await pilot.pause()
        assert "TOASTY" in screen_text(app)
        await pilot.press("s")
        await pilot.pause(0.2)
        (svg,) = (tmp_path / "export").glob("*.svg")
        assert "TOASTY" not in svg.read_text()


async def test_compare_only_takes_its_own_keys_and_highlights_differences(tmp_path):
    a = write_run(tmp_path / "runs" / "20250101-000000-all-digits")
    b = write_run(
        tmp_path / "runs" / "20250102-000000-all-digits", canned_events(fail="DivergedError")
    )
    rows = compare_rows(load_run_state(a), load_run_state(b))
    status = next(r for r in rows if r[:2] == ("run", "status"))
    assert status[2:] == ("finished", "failed")
    assert next(r for r in rows if r[:2] == ("spec", "widths"))[2:] == ("16,64,256", "16,64,256")
    assert any(r[0] == "tables" and r[2] != r[3] for r in rows)  # the failed run has fewer
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(CompareScreen(load_run_state(a), load_run_state(b)))
        await pilot.pause()
        for key in ("2", "r", "e"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, CompareScreen), key
        assert app.query_one(TabbedContent).active == "setup" and not run_dirs(tmp_path)[2:]
        text = screen_text(app)
        assert re.search(r"\d+ of \d+ rows differ", text)
        line = next(ln for ln in text.splitlines() if "status" in ln)
        assert line.index("finished") > 20 and line.index("failed") > line.index("finished") + 10
        footer = await footer_text(pilot, app)
        assert "Back" in footer and "Panels" not in footer and "Run" not in footer
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)


async def test_a_fast_second_panel_key_wins_over_the_first_panels_focus(tmp_path):
    """ "4" then "5" in quick succession: the Flips panel's focus (given after "4") reaches the
    tabs after "5" switched away; it must not pull Flips back (a lost key)."""
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("escape")
        app.action_show_tab("flips")
        await pilot.pause()
        app.screen.set_focus(None)
        app._focus_pane("flips")  # what showing Flips does after the refresh …
        app.action_show_tab("landscape")  # … and the next key, before the focus message
        await pilot.pause()
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "landscape"


async def test_executor_and_ray_address_go_into_the_spec_and_are_validated(tmp_path, monkeypatch):
    pytest.importorskip("ray", reason="the [ray] extra is not installed")
    runner = ReplayRunner(canned_events())
    app = make_test_app(tmp_path, runner)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot, app)
        assert app.query_one("#f-executor", Select).value == "local"
        app.query_one("#f-address", Input).value = "head:6379"
        await _settle(pilot, app)
        assert "only used with executor ray" in _error(app, "address")
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert runner.started_spec is None  # refused
        app.query_one("#f-address", Input).value = "   "
        app.query_one("#f-executor", Select).value = "ray"
        await _settle(pilot, app)
        assert _error(app, "address") == ""  # blank: a local Ray
        monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were missing
        app.query_one("#f-address", Input).value = "head:6379"
        await _settle(pilot, app)
        assert "pip install 'malleability[ray]'" in _error(app, "executor")
        monkeypatch.delitem(sys.modules, "ray")
        app.query_one("#f-address", Input).value = "ray://head:10001"
        await _settle(pilot, app)
        assert app.query_one("#setup-form").errors == {}
        await pilot.press("ctrl+r")
        await pilot.pause()
        ex = runner.started_spec.executor
        assert (ex.kind, ex.address) == ("ray", "ray://head:10001")
        await wait_job(pilot, app)


async def test_status_bar_shows_the_cells_in_flight_of_a_running_sweep(tmp_path):
    evs = canned_events()
    at = next(i for i, e in enumerate(evs) if isinstance(e, Progress) and e.task == "sweep")
    evs.insert(at + 1, Progress("sweep", 3, 12, "ntk m=16: 1.0 s; 2 in flight", running=2))
    runner = ReplayRunner(evs, pause_after=at + 2)
    app = make_test_app(tmp_path, runner)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot, app)
        await pilot.press("ctrl+r")
        for _ in range(100):
            await pilot.pause(0.05)
            if runner.paused.is_set() and "in flight" in screen_text(app):
                break
        assert "cell 3/12 (2 in flight)" in screen_text(app)
        runner.cancel()
        await wait_job(pilot, app)


async def test_a_form_error_toast_names_the_field_once(tmp_path):
    """ctrl+r on a wrong field: the toast names the field by its label once ("Widths:
    comma-separated …", not "widths: Widths: …"), whole at 80 columns."""
    runner = ReplayRunner(canned_events())
    app = make_test_app(tmp_path, runner)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        for key, bad, label in (("widths", "abc", "Widths"), ("n_train", "0", "n train")):
            app.clear_notifications()
            app.query_one(f"#f-{key}", Input).value = bad
            await _settle(pilot, app)
            await pilot.press("ctrl+r")
            await pilot.pause()
            assert runner.started_spec is None
            (toast,) = [n.message for n in app._notifications]
            assert toast.startswith(f"fix the form first: {label}: "), toast
            assert toast.lower().count(label.lower()) == 1, toast
            app.query_one(f"#f-{key}", Input).value = "16" if key == "widths" else "100"


async def test_the_centring_fraction_field_sets_data_center_fraction(tmp_path):
    """The form's Centring field is ``--center-fraction`` (data.center_fraction): a number
    from 0 to 1 goes into the spec, blank leaves it unset, anything else is refused under
    the field with what is allowed (the shared option parser, then the spec's check)."""
    from tui_support import SPEC

    app = make_test_app(tmp_path, spec=SPEC.replace(data__center_fraction=0.25))
    async with app.run_test(size=(80, 24)) as pilot:
        field = app.query_one("#f-center_fraction", Input)
        assert field.value == "0.25"
        form = app.query_one("#setup-form")
        for text, want in (("0.5", 0.5), ("0", 0.0), ("1", 1.0), ("", None)):
            field.value = text
            await _settle(pilot, app)
            spec, errors = form.validate()
            assert errors == {} and spec is not None, errors
            assert spec.data.center_fraction == want
        for text, why in (("abc", "Centring: a number"), ("1.5", "from 0"), ("-0.1", "to 1")):
            field.value = text
            await _settle(pilot, app)
            spec, errors = form.validate()
            assert spec is None and why in errors["center_fraction"], errors
            assert why in _error(app, "center_fraction")
