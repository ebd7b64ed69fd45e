"""Pilot tests: every panel driven by a fake runner replaying canned events."""

from __future__ import annotations

import json

from textual.widgets import DataTable, Input, Label, Static
from tui_support import (
    canned_events,
    footer_text,
    make_test_app,
    run_dirs,
    screen_text,
    wait_job,
    write_interrupted_run,
    write_run,
)

from engine.run.spec import RunSpec
from malleability_tui.dialogs.error_dialog import ErrorDialog
from malleability_tui.runner import JobPulse, ReplayRunner
from malleability_tui.screens.compare import CompareScreen
from malleability_tui.screens.help import HelpScreen
from malleability_tui.widgets.plot_view import PlotView


async def test_run_fills_every_panel(tmp_path):
    app = make_test_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+r")
        await wait_job(pilot, app)
        assert app.state.status == "finished"
        assert app.query_one("TabbedContent").active == "training"
        (run,) = run_dirs(tmp_path)
        assert json.loads((run / "env.json").read_text())["status"] == "finished"
        assert len((run / "ntk_distance.csv").read_text().splitlines()) == 1 + 12

        await pilot.press("2")
        await pilot.pause()
        fig = app.query_one("#sweep-plot", PlotView).figure
        assert [s.label for s in fig.series] == ["2L-ReLU", "MLP-Attn"]
        assert list(fig.series[1].x) == [16, 64, 256]
        assert fig.title.startswith("lin_distance_rel vs width")  # the well-posed one leads
        assert app.query_one("#drift-plot", PlotView).figure.series  # drift of the last cell
        await pilot.press("m")
        await pilot.pause()
        fig = app.query_one("#sweep-plot", PlotView).figure
        assert fig.title.startswith("ntk_distance vs width")
        assert fig.series[0].err[0] > 0  # two seeds → a std
        await pilot.press("m")
        await pilot.pause()
        assert "ntk_distance_rel" in app.query_one("#sweep-plot", PlotView).figure.title

        await pilot.press("3")
        await pilot.pause()
        stats = str(app.query_one("#spec-stats", Static).content)
        assert "κ(G³) measured" in stats and "+30.0 orders" in stats
        assert len(app.query_one("#eig-plot", PlotView).figure.series[0].y) == 40

        await pilot.press("4")
        await pilot.pause()
        table = app.query_one("#flip-table", DataTable)
        assert table.row_count == 8  # 2 trainings × 2 attacks × 2 models
        notes = str(app.query_one("#flip-notes", Static).content)
        assert "→" in notes and "PGD" in notes

        await pilot.press("5")
        await pilot.pause()
        assert len(app.query_one("#curve-plot", PlotView).figure.series) == 2
        grid = app.query_one("#surface-plot", PlotView).figure.grid
        assert len(grid) == 7 and len(grid[0]) == 7
        assert "12.5" in str(app.query_one("#sharpness", Static).content)

        await pilot.press("6")
        await pilot.pause()
        assert "cell: MLP-Attn" in str(app.query_one("#train-title", Static).content)
        assert len(app.query_one("#log").lines) >= 2

        await pilot.press("7")
        await pilot.pause()
        assert app.query_one("#runs-table", DataTable).row_count == 1


async def test_form_validation_blocks_bad_spec(tmp_path):
    runner = ReplayRunner(canned_events())
    app = make_test_app(tmp_path, runner)
    async with app.run_test(size=(80, 24)) as pilot:
        widths = app.query_one("#f-widths", Input)
        widths.value = "16,abc"
        seeds = app.query_one("#f-seeds", Input)
        seeds.value = "0,0"
        await pilot.pause()
        err_w = app.query_one("#err-widths", Label)
        err_s = app.query_one("#err-seeds", Label)
        assert "integers" in str(err_w.content) and err_w.has_class("-show")
        assert "each value once (0 is repeated)" in str(err_s.content)  # the CLI's words
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert runner.started_spec is None and not run_dirs(tmp_path)
        widths.value = "4,8"
        seeds.value = "3"
        app.query_one("#f-experiment", Input).value = "nosuch"
        await pilot.pause()
        assert not err_w.has_class("-show")
        assert "train" in str(app.query_one("#err-experiment", Label).content)
        app.query_one("#f-experiment", Input).value = "all"
        await pilot.pause()
        await pilot.press("ctrl+r")
        await wait_job(pilot, app)
        assert runner.started_spec.model.widths == (4, 8) and runner.started_spec.seeds == (3,)


async def test_failure_shows_dialog_and_app_keeps_running(tmp_path):
    app = make_test_app(tmp_path, ReplayRunner(canned_events(fail="DivergedError")))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+r")
        await wait_job(pilot, app)
        assert app.query_one(ErrorDialog).is_open
        assert "diverged" in app.query_one(ErrorDialog).body
        await pilot.press("enter")
        await pilot.pause()
        assert not app.query_one(ErrorDialog).is_open
        assert app.state.status == "failed"
        (run,) = run_dirs(tmp_path)
        assert json.loads((run / "env.json").read_text())["status"] == "failed"
        # finished cells were kept
        assert len((run / "ntk_distance.csv").read_text().splitlines()) == 13
        await pilot.press("2")
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "sweep"


async def test_crash_in_runner_is_a_dialog(tmp_path):
    class Boom(ReplayRunner):
        def _events(self, spec, **kw):
            yield canned_events()[0]
            raise RuntimeError("bug in a job")

    app = make_test_app(tmp_path, Boom([]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+r")
        await wait_job(pilot, app)
        assert (
            app.query_one(ErrorDialog).is_open and "bug in a job" in app.query_one(ErrorDialog).body
        )
        assert app.is_running


async def test_cancel_keeps_finished_cells(tmp_path):
    events = canned_events()
    cut = next(i for i, e in enumerate(events) if type(e).__name__ == "CellFinished") + 3
    runner = ReplayRunner(events, pause_after=cut)
    app = make_test_app(tmp_path, runner)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+r")
        assert runner.paused.wait(5)
        await pilot.pause(0.1)
        assert app.state.status == "running"
        await pilot.press("escape", "c")
        await wait_job(pilot, app)
        assert app.state.status == "cancelled"
        (run,) = run_dirs(tmp_path)
        assert json.loads((run / "env.json").read_text())["status"] == "cancelled"
        assert (
            len((run / "ntk_distance.csv").read_text().splitlines()) == 2
        )  # header + the one finished cell


async def test_quit_cancels_running_job(tmp_path):
    runner = ReplayRunner(canned_events(), pause_after=20)
    app = make_test_app(tmp_path, runner)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+r")
        assert runner.paused.wait(5)
        await pilot.press("ctrl+q")
        for _ in range(100):
            await pilot.pause(0.05)
            if not app.is_running:
                break
    assert runner.wait(5)
    (run,) = run_dirs(tmp_path)
    assert json.loads((run / "env.json").read_text())["status"] == "cancelled"


async def test_open_compare_export_screenshot(tmp_path):
    a = write_run(tmp_path / "runs" / "20250101-000000-all-digits")
    write_run(tmp_path / "runs" / "20250102-000000-all-digits", canned_events(fail="DivergedError"))
    app = make_test_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("7")
        await pilot.pause()
        table = app.query_one("#runs-table", DataTable)
        assert table.row_count == 2
        table.focus()
        table.move_cursor(row=1)  # newest first: row 1 is the finished run
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert app.state.run_dir == str(a) and app.state.status == "finished"
        assert app.query_one("TabbedContent").active == "sweep"
        assert len(app.query_one("#sweep-plot", PlotView).figure.series) == 2
        await pilot.press("4")
        await pilot.pause()
        assert app.query_one("#flip-table", DataTable).row_count == 8

        await pilot.press("e")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        exported = tmp_path / "export" / a.name
        assert sorted(p.name for p in exported.iterdir()) == sorted(
            [p.name for p in a.glob("*.csv")] + ["spec.toml", "summary.json", "env.json"]
        )
        await pilot.press("s")
        await pilot.pause()
        assert list((tmp_path / "export").glob("*.svg"))

        await pilot.press("7")
        table.focus()
        await pilot.pause()
        await pilot.press("space")
        table.move_cursor(row=0)
        await pilot.press("space", "v")
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen)
        text = screen_text(app)
        assert "finished" in text and "failed" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)


async def test_help_palette_and_spec_files(tmp_path):
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for t in (
            "Run",
            "Cancel job",
            "Export CSVs",
            "Screenshot",
            "Load spec",
            "Save spec",
            "Show Runs",
        ):
            assert t in titles
        app.query_one("#f-epochs", Input).value = "7"
        await pilot.pause()
        target = tmp_path / "saved.toml"
        await pilot.press("f3")
        await pilot.pause()
        app.screen.query_one(Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert RunSpec.load(target).train.epochs == 7
        app.query_one("#f-epochs", Input).value = "9"
        await pilot.press("f2")
        await pilot.pause()
        app.screen.query_one(Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one("#f-epochs", Input).value == "7"
        await pilot.press("f2")
        await pilot.pause()
        app.screen.query_one(Input).value = str(tmp_path / "missing.toml")
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one(ErrorDialog).is_open


async def test_resume_interrupted_run_from_the_browser(tmp_path):
    run = write_interrupted_run(tmp_path / "runs" / "20250101-000000-all-digits")
    runner = ReplayRunner(canned_events())
    app = make_test_app(tmp_path, runner, spec=RunSpec())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("7")
        await pilot.pause()
        text = screen_text(app)
        assert "u resumes it here" in text
        footer = await footer_text(
            pilot, app
        )  # the footer fits: the Runs keys and the app's, whole
        assert "u Resume" in footer and "q Quit" in footer and "c Cancel" not in footer
        await pilot.press("u")
        await wait_job(pilot, app)
        assert app.state.status == "finished"
        assert runner.started_spec is not None and runner.started_spec.seeds == (0, 1)  # its spec
        env = json.loads((run / "env.json").read_text())
        assert env["status"] == "finished" and env["resumed"] is True
        rows = (run / "ntk_distance.csv").read_text().splitlines()
        assert len(rows) == 1 + 12 and len(set(rows)) == len(rows)  # the 2 kept cells once
        assert run_dirs(tmp_path) == [run]  # continued in place, no new folder
        assert "2 finished cells kept" in "\n".join(m for _, m in app.state.logs)
        await pilot.press("7")
        await pilot.pause()
        assert "u Resume" not in await footer_text(pilot, app)  # finished: nothing to resume
        await pilot.press("u")
        await pilot.pause()
        assert not runner.running and app.state.status == "finished"


def test_pulses_coalesce():
    from engine.run.events import Progress
    from malleability_tui.runner import JobProgress

    assert JobPulse().can_replace(JobPulse())
    a, b = JobProgress(Progress("cell", 1, 5)), JobProgress(Progress("cell", 2, 5))
    assert a.can_replace(b)
    assert not a.can_replace(JobProgress(Progress("sweep", 2, 5)))


async def test_a_run_at_chance_says_so_in_every_panel(tmp_path):
    """MLP-Attn at chance in every cell: the Sweep, Flips and Landscape panels mark it."""
    from dataclasses import replace

    from engine.run.events import TableRow

    def at_chance(e):
        if isinstance(e, TableRow) and e.row.get("model") == "MLP-Attn" and "above_chance" in e.row:
            return replace(e, row={**e.row, "above_chance": False})
        return e

    run = write_run(
        tmp_path / "runs" / "20250101-000000-all-digits", [at_chance(e) for e in canned_events()]
    )
    app = make_test_app(tmp_path, open_run=str(run))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for key, widget in (("2", "#sweep-note"), ("4", "#flip-notes"), ("5", "#sharpness")):
            await pilot.press(key)
            await pilot.pause()
            text = str(app.query_one(widget, Static).content)
            assert "⚠ MLP-Attn: at chance in" in text and "not results" in text, (key, text)
            assert "⚠ 2L-ReLU" not in text
