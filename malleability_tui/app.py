"""The Textual app: a thin composition root. ``make_app(settings, runner)`` builds it.

The app holds the run's state, the runner and three parts of its own: the main screen
(main_screen.py: the panels and the wiring that hands them the state), the job controller
(jobs.py: runs and reproductions) and the run opener (opening.py: runs from disk). Its
keys are declared once in actions.py; the ``action_`` methods here route them.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable
from typing import Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import TabbedContent

from engine.run.spec import RunSpec
from malleability_tui import actions, file_dialogs
from malleability_tui.actions import TAB_TITLES, TABS  # noqa: F401 - the app's tabs, re-exported
from malleability_tui.dialogs.error_dialog import ErrorDialog
from malleability_tui.jobs import JobController, reproduction_plan  # noqa: F401 - re-exported
from malleability_tui.main_screen import PANELS, MainScreen  # noqa: F401 - re-exported
from malleability_tui.opening import RunOpener
from malleability_tui.runner import (
    JobEnded,
    JobProgress,
    JobPulse,
    JobRunner,
    PartDone,
    PartStarted,
    ReproductionEnded,
    ReproductionJob,
    default_runner,
)
from malleability_tui.screens.help import HelpScreen
from malleability_tui.settings import Settings
from malleability_tui.state import RunState
from malleability_tui.widgets.setup_form import SetupForm


class MalleabilityApp(App):
    """Setup → run → watch → browse → export, keyboard first, 80×24 and up."""

    CSS_PATH = "app.tcss"
    TITLE = "malleability"
    BINDINGS: ClassVar[list[BindingType]] = [*actions.BINDINGS]

    def __init__(self, settings: Settings | None = None, runner: JobRunner | None = None) -> None:
        super().__init__()
        if "TEXTUAL_ANIMATIONS" not in os.environ:
            # No animations unless asked for: they cost ~60 ms of CPU per tab switch (the
            # tabs' underline slide; `python benchmarks/bench_tab_switch.py`), taken from
            # the job on 2 cores, and over SSH every frame of them is sent.
            # TEXTUAL_ANIMATIONS=basic|full brings them back.
            self.animation_level = "none"
        self.settings = settings or Settings()
        self.runner = runner or default_runner()
        self.reproduction = ReproductionJob(self.runner)
        self.state = RunState()
        self.jobs = JobController(self)
        self.runs = RunOpener(self)
        self.quitting = False
        self.valid_spec: RunSpec | None = self.settings.spec or RunSpec()
        self.last_export: list[Any] = []

    def get_default_screen(self) -> Screen:
        return MainScreen()

    @property
    def main(self) -> MainScreen:
        """The main screen (the panels), under any dialog or screen pushed on it."""
        return self.screen_stack[0]  # type: ignore[return-value]

    def main_query(self, selector: Any, expect_type: Any = None) -> Any:
        """Query the main screen (a dialog may be on top of it)."""
        base = self.screen_stack[0] if self.screen_stack else self.screen
        return (
            base.query_one(selector)
            if expect_type is None
            else base.query_one(selector, expect_type)
        )

    def main_ready(self) -> None:
        """The main screen is composed: list the runs, open the one asked for, start the
        clock that pushes the state down."""
        self.runs.refresh()
        self.set_interval(self.settings.refresh_interval, self._tick)
        if self.settings.open_run:
            self.open_run(self.settings.open_run)
        self.main.push_state(force=True)
        self.call_after_refresh(self.freeze_heap)  # Textual's own start-up, the widgets

    def freeze_heap(self) -> None:
        """``gc.freeze`` what lives now (modules imported since, widgets), when the settings
        ask (see ``launch.freeze_startup_heap``): a full collection then skips it."""
        if self.settings.freeze_heap:
            gc.freeze()

    @property
    def busy(self) -> bool:
        """A job runs: a run, or a reproduction (also between two of its parts)."""
        return self.runner.running or self.reproduction.running

    def _tick(self) -> None:
        if not self.screen_stack:
            return  # shutting down
        if self.main.stale:
            self.main.push_state()
        elif self.busy:
            self.main.update_status()

    def _focus_pane(self, tab: str) -> None:
        self.main.focus_pane(tab)

    # -- the runner's messages (posted by its thread) and the opener's entry points -------------

    def on_job_pulse(self, message: JobPulse) -> None:
        for ev in self.runner.drain():
            self.state.apply(ev)

    def on_job_progress(self, message: JobProgress) -> None:
        self.state.apply(message.event)

    def on_job_ended(self, message: JobEnded) -> None:
        if self.screen_stack:  # else shutting down
            self.jobs.job_ended(message)

    def on_part_started(self, message: PartStarted) -> None:
        self.jobs.part_started(message)

    def on_part_done(self, message: PartDone) -> None:
        self.jobs.part_done(message)

    def on_reproduction_ended(self, message: ReproductionEnded) -> None:
        if self.screen_stack:  # else shutting down
            self.jobs.reproduction_ended(message)

    def start_job(self, spec: RunSpec, run_dir: Any = None, *, resume: bool = False) -> None:
        """Start ``spec`` (see ``JobController.start_job``)."""
        self.jobs.start_job(spec, run_dir, resume=resume)

    def start_reproduction(self, parts: list[Any], path: Any = None, **meta: Any) -> None:
        """Run a reproduction's ``parts`` (see ``JobController.start_reproduction``)."""
        self.jobs.start_reproduction(parts, path, **meta)

    def cancel_jobs(self) -> None:
        """Cancel the running job (a reproduction: its part, and the parts after it)."""
        self.jobs.cancel()

    def open_run(self, path: str) -> None:
        """Fill every panel from a run directory (see ``RunOpener.open``)."""
        self.runs.open(path)

    def show_error(self, title: str, message: str) -> None:
        """Show the error dialog (an overlay of the main screen, see dialogs/error_dialog.py)."""
        self.main_query(ErrorDialog).show(title, message)

    def _fatal_error(self) -> None:
        """An unhandled exception: one line (traceback in a log file) instead of Textual's
        traceback on the terminal; the app exits with status 1."""
        from malleability_tui.boundary import error_line

        self.bell()
        e = self._exception
        line = error_line(e)[0] if e is not None else "internal error"
        self._exit_renderables.append("error: " + line)
        self._close_messages_no_wait()

    # -- keys (declared in actions.py) ----------------------------------------------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return actions.allowed(self, action, parameters)

    def action_command_palette(self) -> None:
        """Ctrl+P: Textual's palette, guarded against a page key pressed with it."""
        from textual.command import CommandPalette

        from malleability_tui.screens.palette import SafeCommandPalette

        if self.use_command_palette and not CommandPalette.is_open(self):
            self.push_screen(SafeCommandPalette(id="--command-palette"))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from actions.system_commands(self)

    def action_close_error(self) -> None:
        self.main_query(ErrorDialog).is_open = False

    def action_show_tab(self, tab: str) -> None:
        self.main.show_tab(tab)

    def action_leave_field(self, _where: str = "") -> None:
        self.main_query(TabbedContent).query_one("Tabs").focus()

    def action_run_job(self, _where: str = "") -> None:
        self.jobs.run_form()

    def action_reproduce(self, _where: str = "") -> None:
        self.jobs.reproduce_form()

    def action_cancel_job(self) -> None:
        self.jobs.cancel_key()

    async def action_quit(self, _where: str = "") -> None:
        if self.busy and not self.quitting:
            self.quitting = True
            self.cancel_jobs()
            self.notify("cancelling the job before quitting…")
            self.set_timer(15, self._force_quit)
            return
        self.quitting = True
        self.exit()

    def _force_quit(self) -> None:
        store = getattr(self.runner, "store", None)
        if store is not None:
            store.close("interrupted")
        self.exit()

    def action_export(self) -> None:
        file_dialogs.export(self)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Textual's action (same arguments), into the export folder by default and
        without the toasts of earlier actions: they are gone once the screen refreshed."""
        self.clear_notifications()
        self.call_after_refresh(file_dialogs.screenshot, self, filename, path)

    def action_help(self, _where: str = "") -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_quick_preset(self, _where: str = "") -> None:
        from engine.reproduce.presets import apply_quick, quick_departures

        q = self.main_query(SetupForm).apply_preset(apply_quick)
        self.action_show_tab("setup")
        self.notify(
            f"quick preset: n {q.data.n_train}/{q.data.n_test}, widths {q.model.widths[0]}-"
            f"{q.model.widths[-1]}, {q.train.epochs} epochs, {len(q.seeds)} seed (F6: paper)"
        )
        if line := quick_departures(q):
            self.notify(line, severity="warning")

    def action_paper_preset(self, _where: str = "") -> None:
        from engine.reproduce.presets import paper_settings

        self.main_query(SetupForm).apply_preset(paper_settings)
        self.action_show_tab("setup")
        self.notify("paper preset: widths 4-4096, 3 seeds, 500 epochs: hours on a CPU (F4: quick)")

    def action_load_spec(self) -> None:
        file_dialogs.load_spec(self)

    def action_save_spec(self) -> None:
        file_dialogs.save_spec(self)


def make_app(settings: Settings | None = None, runner: JobRunner | None = None) -> MalleabilityApp:
    """Build the app (the one way to build it; tests inject a fake runner)."""
    return MalleabilityApp(settings, runner)
