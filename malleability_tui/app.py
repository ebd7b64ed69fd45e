"""The Textual app: a thin composition root. ``make_app(settings, runner)`` builds it."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import Input, TabbedContent, TabPane, TextArea

from engine.errors import EngineError
from engine.experiments.estimate import CONFIRM_SECONDS
from engine.run.paths import runs_root as default_runs_root
from engine.run.spec import RunSpec
from engine.run.store import RunStore
from malleability_tui import actions, file_dialogs
from malleability_tui.actions import TAB_TITLES, TABS
from malleability_tui.dialogs.confirm_dialog import ConfirmDialog
from malleability_tui.dialogs.error_dialog import ErrorDialog
from malleability_tui.format import error_text
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
from malleability_tui.state import RunState, load_run_state
from malleability_tui.text import duration
from malleability_tui.widgets.claims_panel import ClaimsPanel
from malleability_tui.widgets.flips_panel import FlipsPanel
from malleability_tui.widgets.key_footer import KeyFooter
from malleability_tui.widgets.landscape_panel import LandscapePanel
from malleability_tui.widgets.panel_tabs import PanelTabs
from malleability_tui.widgets.runs_browser import RunsBrowser
from malleability_tui.widgets.setup_form import DataChoice, SetupForm, data_choices
from malleability_tui.widgets.spectra_panel import SpectraPanel
from malleability_tui.widgets.status_bar import StatusBar
from malleability_tui.widgets.sweep_panel import SweepPanel
from malleability_tui.widgets.training_panel import TrainingPanel

PANELS = {
    "claims": ClaimsPanel,
    "sweep": SweepPanel,
    "spectra": SpectraPanel,
    "flips": FlipsPanel,
    "landscape": LandscapePanel,
    "training": TrainingPanel,
}

FIRST_TAB = (
    ("ntk_distance", "sweep"),
    ("train", "training"),
    ("spectrum", "spectra"),
    ("flip_rates", "flips"),
    ("influence_check", "flips"),
    ("landscape", "landscape"),
    ("kappa_sweep", "spectra"),
)
"""The tab an opened run shows: that of its first table (in this order) with rows."""


@dataclass
class Settings:
    """What the app needs from outside; tests pass tmp folders and canned data choices."""

    runs_root: Path = field(default_factory=default_runs_root)
    export_root: Path = field(default_factory=lambda: Path("export"))
    spec: RunSpec | None = None
    data_root: str | None = None
    data_choices: list[DataChoice] | None = None
    experiments: list[str] | None = None
    refresh_interval: float = 0.5
    """Seconds between panel redraws (and status-clock updates) while events arrive. A
    redraw of the live panel costs ~20 ms of UI CPU; at 0.2 s that took ~0.2 of a core
    from training on 2 cores, at 0.5 s ~0.08 (benchmarks/bench_tui_latency.py)."""
    clock: bool = True
    """Show elapsed time / ETA (off in snapshot tests, which must not depend on time)."""
    open_run: str | None = None
    """A run directory to open at start."""
    flops_per_s: float | None = None
    """This machine's matmul rate for run-time estimates (None: measured once, 0.1 s)."""
    subset_counts: Any = None
    """(data set, data dir) → class counts for the form's checks (None: the engine's)."""
    freeze_heap: bool = False
    """Take the long-lived heap out of the collector's full passes after start-up and after
    the first job's imports (``freeze_startup_heap``). ``malleability-tui`` sets it; tests,
    which share one process, leave its collector alone."""


def _experiment_names() -> list[str]:
    try:
        from engine.experiments.registry import describe

        return [d["name"] for d in describe()]
    except Exception:  # noqa: BLE001 - the form still works, validation will say what is wrong
        return []


class MalleabilityApp(App):
    """Setup → run → watch → browse → export, keyboard first, 80×24 and up."""

    CSS_PATH = "app.tcss"
    TITLE = "malleability"
    BINDINGS: ClassVar[list[BindingType]] = [*actions.BINDINGS]
    PLAIN_KEY_ACTIONS = actions.PLAIN_KEY_ACTIONS
    """Actions of plain-character keys: hidden from the footer while typing in a field."""
    MAIN_ONLY_ACTIONS = actions.MAIN_ONLY_ACTIONS
    """Actions on the main screen's panels: off while another screen (help, compare) shows."""

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
        self._shown_revision = -1
        self._panel_shown: dict[str, tuple[RunState, int]] = {}
        """Panel → (state, revision) it last got (see ``_give_state``)."""
        self._job_t0: float | None = None
        self._quitting = False
        self.valid_spec: RunSpec | None = self.settings.spec or RunSpec()
        self._flops: float | None = None
        self._frozen_after_job = False
        self.last_export: list[Path] = []

    # -- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        s = self.settings
        spec = s.spec or _first_spec(s.runs_root)
        choices = s.data_choices if s.data_choices is not None else data_choices(s.data_root)
        exps = s.experiments if s.experiments is not None else _experiment_names()
        with PanelTabs(id="tabs"):
            for tab, title in zip(TABS, TAB_TITLES):
                with TabPane(title, id=tab):
                    if tab == "setup":
                        yield SetupForm(
                            spec, choices, exps, counts=s.subset_counts, id="setup-form"
                        )
                    elif tab == "runs":
                        yield RunsBrowser(id="runs-browser")
                    else:
                        yield PANELS[tab](id=f"{tab}-panel")
        yield StatusBar(id="status")
        yield ErrorDialog(id="error-dialog")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.refresh_runs()
        self.set_interval(self.settings.refresh_interval, self._tick)
        if self.settings.open_run:
            self.open_run(self.settings.open_run)
        self._push_state(force=True)
        self.call_after_refresh(self._freeze_heap)  # Textual's own start-up, the widgets

    def _freeze_heap(self) -> None:
        """``gc.freeze`` what lives now (modules imported since, widgets), when the settings
        ask (see ``freeze_startup_heap``): a full collection then skips it."""
        if self.settings.freeze_heap:
            gc.freeze()

    # -- pushing the state down -------------------------------------------------------------------

    def main_query(self, selector: Any, expect_type: Any = None) -> Any:
        """Query the main screen (a dialog may be on top of it)."""
        base = self.screen_stack[0] if self.screen_stack else self.screen
        return (
            base.query_one(selector)
            if expect_type is None
            else base.query_one(selector, expect_type)
        )

    def _panel(self, tab: str) -> Any:
        return self.main_query(f"#{tab}-panel")

    def _push_state(self, force: bool = False) -> None:
        """Give the panels the state (only the visible one while a job streams)."""
        active = self.main_query(TabbedContent).active
        for tab in PANELS:
            if force or tab == active:
                self._give_state(tab)
        self._shown_revision = self.state.revision
        self._update_status()

    def _give_state(self, tab: str) -> None:
        """Hand ``tab``'s panel the state unless it already shows this revision of it: a
        panel rebuilds its charts on every hand-over, and a tab switch must not pay that."""
        shown = self._panel_shown.get(tab)
        if shown is not None and shown[0] is self.state and shown[1] == self.state.revision:
            return
        self._panel(tab).state = self.state
        self._panel_shown[tab] = (self.state, self.state.revision)

    def _tick(self) -> None:
        if not self.screen_stack:
            return  # shutting down
        if self.state.revision != self._shown_revision:
            self._push_state()
        elif self.busy:
            self._update_status()

    def _update_status(self) -> None:
        st = self.state
        if not self.settings.clock:
            elapsed = None
        elif self.runner.running and self._job_t0 is not None:
            elapsed = time.monotonic() - self._job_t0
        elif st.started_at and st.ended_at:
            elapsed = st.ended_at - st.started_at
        else:
            elapsed = None
        self.main_query(StatusBar).show(st, elapsed)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id if event.pane is not None else None
        if not self.screen_stack:
            return  # shutting down
        if tab in PANELS:
            self._give_state(tab)
        if tab:
            self.call_after_refresh(self._focus_pane, tab)

    def _focus_pane(self, tab: str) -> None:
        """Focus the pane's main widget so its keys (shown in the footer) work at once.

        Only when ``tab`` is still the active pane and focus is not already inside it:
        focusing a widget of another pane makes TabbedContent switch to that pane.
        """
        tc = self.main_query(TabbedContent)
        if not self.screen_stack or tc.active != tab or self.main_query(ErrorDialog).is_open:
            return
        focused = self.screen_stack[0].focused
        pane = self.main_query(f"#{tab}", TabPane)
        if focused is not None and pane in focused.ancestors_with_self:
            return
        target = {
            "setup": "#setup-form",
            "runs": "#runs-table",
            "flips": "#flip-table",
            "claims": "#claims-table",
        }.get(tab, f"#{tab}-panel")
        widget = self.main_query(target)
        if not widget.display:
            return  # the claims table while no reproduction is open
        # set_focus now, not Widget.focus() (deferred): a panel key handled in between would
        # see this focus land in the pane it just left, which switched back to it.
        self.screen_stack[0].set_focus(widget)

    @property
    def busy(self) -> bool:
        """A job runs: a run, or a reproduction (also between two of its parts)."""
        return self.runner.running or self.reproduction.running

    # -- job messages (posted by the runner's thread) ---------------------------------------------------

    def on_job_pulse(self, message: JobPulse) -> None:
        for ev in self.runner.drain():
            self.state.apply(ev)

    def on_job_progress(self, message: JobProgress) -> None:
        self.state.apply(message.event)

    def on_job_ended(self, message: JobEnded) -> None:
        if not self.screen_stack:
            return  # shutting down
        for ev in self.runner.drain():
            self.state.apply(ev)
        env = _read_env(message.run_dir)
        if env:
            self.state.env = env
        if message.status == "crashed":
            self.state.status = "failed"
        self._push_state(force=True)
        self.refresh_runs()
        self.refresh_bindings()
        if self._quitting:
            self.exit()
            return
        if message.status == "finished" and self.reproduction.running:
            self.state.log(f"part finished: {message.run_dir}")
        elif message.status == "finished":
            self.notify(f"run finished: {message.run_dir}", title="done")
        elif message.status == "cancelled":
            self.notify(f"cancelled; finished cells kept in {message.run_dir}", severity="warning")
        else:
            err, msg = message.error or ("Error", "the job stopped")
            self.show_error(
                f"The run failed: {err}", f"{msg}\n\nPartial results are kept in {message.run_dir}"
            )

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "close_error":
            try:
                return self.main_query(ErrorDialog).is_open
            except Exception:  # noqa: BLE001 - before mount / after unmount
                return False
        if self._quitting and action != "quit":
            return False  # keys typed after q (a burst, a paste) must not start anything
        try:
            screen = self.screen
            main = screen is self.screen_stack[0]
        except Exception:  # noqa: BLE001 - before mount / after unmount
            return False
        if action in self.MAIN_ONLY_ACTIONS and not main:
            return False
        typing = isinstance(screen.focused, (Input, TextArea))
        if parameters[:1] == ("field",):
            return typing  # the ctrl+/F-key twin of a key: shown (and used) while typing
        if action == "cancel_job" and not self.busy:
            return False  # nothing to cancel: not offered (the footer fits 80 columns)
        if typing and action in self.PLAIN_KEY_ACTIONS:
            return False
        return True

    def action_command_palette(self) -> None:
        """Ctrl+P: Textual's palette, guarded against a page key pressed with it."""
        from textual.command import CommandPalette

        from malleability_tui.screens.palette import SafeCommandPalette

        if self.use_command_palette and not CommandPalette.is_open(self):
            self.push_screen(SafeCommandPalette(id="--command-palette"))

    def action_close_error(self) -> None:
        self.main_query(ErrorDialog).is_open = False

    def _fatal_error(self) -> None:
        """An unhandled exception: one line (traceback in a log file) instead of Textual's
        traceback on the terminal; the app exits with status 1."""
        self.bell()
        self._exit_renderables.append(_crash_line(self, self._exception))
        self._close_messages_no_wait()

    def show_error(self, title: str, message: str) -> None:
        """Show the error dialog (an overlay of the main screen, see dialogs/error_dialog.py)."""
        self.main_query(ErrorDialog).show(title, message)

    # -- actions ---------------------------------------------------------------------------------

    def action_show_tab(self, tab: str) -> None:
        tc = self.main_query(TabbedContent)
        if tc.active == tab:
            self._focus_pane(tab)
        else:
            # Blur first: a focused widget left in the hidden pane would pull it back.
            self.screen_stack[0].set_focus(None)
            tc.active = tab
            # Focus the pane now, before the frame that shows it (the TabActivated handler
            # does it after that frame, for a click on a tab): the pane's keys then reach the
            # footer in the same frame, not one or two frames later (~30 ms, bench_tui_pty).
            self._focus_pane(tab)

    def action_leave_field(self, _where: str = "") -> None:
        self.main_query(TabbedContent).query_one("Tabs").focus()

    def on_setup_form_spec_changed(self, message: SetupForm.SpecChanged) -> None:
        self.valid_spec = message.spec

    def action_run_job(self, _where: str = "") -> None:
        if self.busy:
            self.notify("a job is already running (c cancels it)", severity="warning")
            return
        form = self.main_query(SetupForm)
        spec, errors = form.validate()
        if spec is None:
            self.action_show_tab("setup")
            first = next(iter(errors.items()))
            self.notify(f"fix the form first: {first[0]}: {first[1]}", severity="error")
            return
        est = self.estimate(spec)
        if est is not None and est > CONFIRM_SECONDS:
            self.push_screen(
                ConfirmDialog(
                    f"This run is estimated at ≈ {duration(est)} on this machine.",
                    "From its FLOP count (as `malleability reproduce --dry-run`); F4 in the "
                    "form applies the quick preset (minutes).",
                    "Start it",
                ),
                lambda ok: self.start_job(spec) if ok else None,
            )
            return
        self.start_job(spec)

    def estimate(self, spec: RunSpec) -> float | None:
        """Estimated seconds of ``spec`` here (engine/experiments/estimate.py); None if unknown."""
        from engine.experiments.estimate import estimate_seconds, probe_flops

        try:
            if self._flops is None:
                self._flops = self.settings.flops_per_s or probe_flops()
            return estimate_seconds([spec], flops_per_s=self._flops)
        except (EngineError, KeyError, ValueError):  # a data set the model does not know
            return None

    def start_job(
        self, spec: RunSpec, run_dir: Path | None = None, *, resume: bool = False
    ) -> None:
        """Start ``spec`` into a new run directory under the runs root, or (``resume``)
        continue the run in ``run_dir``, skipping its finished cells."""
        from engine.run.store import default_run_dir

        self.action_show_tab("training")

        def ready(store: RunStore) -> None:  # the directory is open; the job has not begun
            if resume:  # the panels show the kept cells, then the new ones arrive
                self.state = load_run_state(store.path)
                self.state.status = "running"
                self.state.log(
                    f"resumed {store.path}: {len(store.done_cells)} finished cells kept and skipped"
                )
            else:
                self.state = RunState(
                    run_dir=str(store.path), spec=spec.to_dict(), status="running"
                )
                self.state.log(f"started {spec.experiment} on {spec.data.name} → {store.path}")
            self.state.env = dict(store.env)

        try:
            if run_dir is None:
                self.settings.runs_root.mkdir(parents=True, exist_ok=True)
                run_dir = default_run_dir(spec, self.settings.runs_root)
            self.runner.start(self, spec, run_dir, resume=resume, before=ready)
        except (EngineError, OSError) as e:
            self.show_error("Could not start the run", error_text(e))
            return
        self.refresh_runs()
        self.refresh_bindings()  # c Cancel now applies
        self._job_t0 = time.monotonic()
        self._push_state(force=True)
        if not self._frozen_after_job:  # the first job imported the rest of the engine
            self._frozen_after_job = True
            self.call_after_refresh(self._freeze_heap)

    def action_reproduce(self, _where: str = "") -> None:
        """The paper's reproduction (``malleability reproduce``) for the form's data set,
        with ``--quick`` when the form holds the quick preset; the checklist fills in live."""
        from engine.experiments.estimate import estimate_seconds, probe_flops

        if self.busy:
            self.notify("a job is already running (c cancels it)", severity="warning")
            return
        spec, errors = self.main_query(SetupForm).validate()
        if spec is None:
            self.action_show_tab("setup")
            first = next(iter(errors.items()))
            self.notify(f"fix the form first: {first[0]}: {first[1]}", severity="error")
            return
        try:
            parts = reproduction_plan(spec)
            self._flops = self._flops or self.settings.flops_per_s or probe_flops()
            est = estimate_seconds([p.spec for p in parts], flops_per_s=self._flops)
        except (EngineError, KeyError, ValueError) as e:
            self.show_error("Could not plan the reproduction", error_text(e))
            return
        meta = {"datasets": [spec.data.name], "tables": [1, 2, 3, 4], "quick": spec.quick}
        if est > CONFIRM_SECONDS:
            self.push_screen(
                ConfirmDialog(
                    f"This reproduction is estimated at ≈ {duration(est)} on this machine.",
                    f"{len(parts)} runs: " + ", ".join(p.key for p in parts) + ". F4 in the "
                    "form applies the quick preset (the reproduction's --quick).",
                    "Start it",
                ),
                lambda ok: (
                    self.start_reproduction(parts, estimated_seconds=est, **meta) if ok else None
                ),
            )
            return
        self.start_reproduction(parts, estimated_seconds=est, **meta)

    def start_reproduction(self, parts: list[Any], path: Path | None = None, **meta: Any) -> None:
        """Run a reproduction's ``parts`` (``engine.reproduce.plan.plan``) into ``path``
        (default: a new ``<time>-reproduce`` folder under the runs root); ``meta``:
        datasets, tables, quick, estimated_seconds (as reproduce.json records them)."""
        if path is None:
            path = self.settings.runs_root / f"{time.strftime('%Y%m%d-%H%M%S')}-reproduce"
        meta = {"datasets": [], "tables": [], "quick": False, "estimated_seconds": 0.0, **meta}
        try:
            if path.exists() and any(path.iterdir()):
                raise EngineError(f"{path} is not empty: a reproduction starts a new folder")
            self.reproduction.start(self, path, parts, **meta)
        except (EngineError, OSError, RuntimeError) as e:
            self.show_error("Could not start the reproduction", error_text(e))
            return
        self._job_t0 = time.monotonic()
        self.refresh_bindings()
        self.notify(f"reproduction: {len(parts)} runs into {path}")

    def on_part_started(self, message: PartStarted) -> None:
        rep = dict(self.state.reproduction) if self.state.reproduction else {}
        rep.update(path=str(message.path), parts=list(message.parts))
        rep.setdefault("summary", {})
        self.state = RunState(
            run_dir=str(message.run_dir), spec=message.spec.to_dict(), status="running"
        )
        self.state.reproduction = rep
        self.state.log(f"reproduction part {message.key} → {message.run_dir}")
        self._push_state(force=True)
        self.refresh_runs()
        self.refresh_bindings()

    def on_part_done(self, message: PartDone) -> None:
        rep = dict(self.state.reproduction)
        rep["summary"] = message.comparison
        self.state.reproduction = rep
        self.state.log(f"reproduction part {message.key} done: checklist updated")
        self._push_state(force=True)

    def on_reproduction_ended(self, message: ReproductionEnded) -> None:
        if not self.screen_stack:
            return  # shutting down
        self.refresh_bindings()
        self.refresh_runs()
        if self._quitting:
            self.exit()
        elif message.status == "finished":
            self.open_reproduction(str(message.path))
        elif message.status == "cancelled":
            self.notify(
                f"reproduction cancelled; finished parts kept in {message.path}",
                severity="warning",
            )
        else:  # a failed part showed its error when it ended
            self.notify(f"reproduction stopped: {message.error}", severity="error")

    def action_cancel_job(self) -> None:
        if not self.busy:
            self.notify("no job is running", severity="warning")
            return
        self.cancel_jobs()
        self.state.log("cancelling… (stops after the current step)", "warning")
        self.notify("cancelling: stops between steps, finished cells are kept")

    def cancel_jobs(self) -> None:
        """Cancel the running job (a reproduction: its part, and the parts after it)."""
        if self.reproduction.running:
            self.reproduction.cancel()
        else:
            self.runner.cancel()

    async def action_quit(self, _where: str = "") -> None:
        if self.busy and not self._quitting:
            self._quitting = True
            self.cancel_jobs()
            self.notify("cancelling the job before quitting…")
            self.set_timer(15, self._force_quit)
            return
        self._quitting = True
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

    # -- runs browser -------------------------------------------------------------------------------

    def refresh_runs(self) -> None:
        from engine.run.runs import list_runs

        browser = self.main_query(RunsBrowser)
        browser.live = self.state.run_dir if self.runner.running else None
        browser.runs = list_runs(self.settings.runs_root)

    def on_runs_browser_refresh(self, message: RunsBrowser.Refresh) -> None:
        self.refresh_runs()

    def on_runs_browser_open_run(self, message: RunsBrowser.OpenRun) -> None:
        self.open_run(message.path)

    def on_runs_browser_resume_run(self, message: RunsBrowser.ResumeRun) -> None:
        self.resume_run(message.path)

    def on_runs_browser_compare_runs(self, message: RunsBrowser.CompareRuns) -> None:
        self.compare_runs(message.a, message.b)

    def compare_runs(self, a: str, b: str) -> None:
        """Open the compare screen on two runs (side by side, differences highlighted)."""
        from malleability_tui.screens.compare import CompareScreen

        try:
            states = load_run_state(a), load_run_state(b)
        except (EngineError, OSError) as e:
            self.show_error("Could not open the runs", error_text(e))
            return
        self.push_screen(CompareScreen(*states))

    def resume_run(self, path: str) -> None:
        """Continue a run that did not finish, with its saved spec (``--resume``)."""
        from engine.run.validate import read_spec

        if self.busy:
            self.notify(
                "a job is running: cancel it (c) before resuming another run", severity="warning"
            )
            return
        try:
            spec = read_spec(Path(path) / "spec.toml")
        except (EngineError, OSError) as e:
            self.show_error("Could not resume the run", error_text(e))
            return
        self.start_job(spec, Path(path), resume=True)

    def open_run(self, path: str) -> None:
        """Fill every panel from a run directory on disk (a reproduction: the Claims panel)."""
        if self.busy:
            self.notify(
                "a job is running: cancel it before opening another run", severity="warning"
            )
            return
        if (Path(path) / "reproduce.json").is_file() and not (Path(path) / "spec.toml").exists():
            self.open_reproduction(path)
            return
        try:
            self.state = load_run_state(path)
        except (EngineError, OSError) as e:
            self.show_error("Could not open the run", error_text(e))
            return
        self._push_state(force=True)
        if self.state.damage:  # opened what could be read; say what could not
            self.show_error("Damaged run (opened the rest)", "\n".join(self.state.damage))
        else:
            self.notify(f"opened {Path(path).name}")
        tab = next((tab for t, tab in FIRST_TAB if self.state.tables.get(t)), "sweep")
        self.action_show_tab(tab)

    def open_reproduction(self, path: str) -> None:
        """Show a reproduction folder's claims checklist (its summary.json) on the Claims
        panel; ``enter`` on a claim opens the sub-run behind it (``show_claim``)."""
        from engine.run.runs import collect
        from engine.run.validate import read_json_object

        try:
            summary, _runs = collect(Path(path))
            parts = read_json_object(Path(path) / "reproduce.json").get("parts") or []
        except (EngineError, OSError) as e:
            self.show_error("Could not open the reproduction", error_text(e))
            return
        self.state = RunState(run_dir=str(path), summary=dict(summary or {}))
        self.state.status = str((summary or {}).get("status") or "finished")
        self.state.reproduction = {
            "path": str(path),
            "summary": dict(summary or {}),
            "parts": [p for p in parts if isinstance(p, dict)],
        }
        self._push_state(force=True)
        self.notify(f"opened reproduction {Path(path).name}")
        self.action_show_tab("claims")

    def on_claims_panel_show_claim(self, message: ClaimsPanel.ShowClaim) -> None:
        self.show_claim(message.item)

    def show_claim(self, item: dict[str, Any]) -> None:
        """Show the panel behind a checklist item, with the reproduction's sub-run that
        holds its cells loaded (the checklist stays on the Claims panel)."""
        from malleability_tui.views.claims import claim_target

        rep = self.state.reproduction
        tab, key = claim_target(item, list(rep.get("parts") or []))
        what = f"claim {item.get('claim')} ({item.get('dataset', '')})"
        sub = Path(str(rep.get("path", ""))) / key if key else None
        if sub is None or not (sub / "spec.toml").is_file():
            self.notify(
                f"{what}: no sub-run of this reproduction holds its cells", severity="warning"
            )
            return
        if self.busy:
            self.notify(
                "a job is running: cancel it before opening another run", severity="warning"
            )
            return
        if Path(self.state.run_dir) != sub:
            try:
                state = load_run_state(sub)
            except (EngineError, OSError) as e:
                self.show_error("Could not open the sub-run", error_text(e))
                return
            state.reproduction = rep
            self.state = state
            self._push_state(force=True)
        self.notify(f"{what}: {key}")
        self.action_show_tab(tab)

    # -- command palette ------------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from actions.system_commands(self)


def reproduction_plan(spec: RunSpec) -> list[Any]:
    """The parts of the paper's reproduction (all four tables) for ``spec``'s data set, as
    ``malleability reproduce --dataset NAME [--quick]`` plans them: --quick when ``spec``
    holds the quick preset, and the form's data folder, device and seeds."""
    from engine.reproduce.plan import plan

    return plan(
        (spec.data.name,),
        quick=spec.quick,
        seeds=spec.seeds,
        data_dir=spec.data.data_dir,
        device=spec.device,
    )


def _first_spec(runs_root: Path) -> RunSpec:
    """The form's spec when none is given: the quick preset on a first launch (no runs yet:
    a first run should take minutes, not hours), else the paper's defaults."""
    from engine.reproduce.presets import apply_quick

    try:
        has_runs = any((d / "spec.toml").is_file() for d in runs_root.iterdir())
    except OSError:
        has_runs = False
    return RunSpec() if has_runs else apply_quick(RunSpec())


def _crash_line(app: App, error: BaseException | None) -> str:
    """Textual's fatal-error hook, routed through the front end's boundary (see main)."""
    from malleability_tui.boundary import error_line

    return "error: " + (error_line(error)[0] if error is not None else "internal error")


def _read_env(run_dir: str) -> dict[str, Any]:
    import json

    try:
        return json.loads((Path(run_dir) / "env.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def make_app(settings: Settings | None = None, runner: JobRunner | None = None) -> MalleabilityApp:
    """Build the app (the one way to build it; tests inject a fake runner)."""
    return MalleabilityApp(settings, runner)


def freeze_startup_heap() -> None:
    """Take what start-up built out of the garbage collector's full passes.

    Start-up builds objects the collector tracks and that live as long as the app: the
    imports before the app runs (Textual, the engine: ~65,000 objects), then torch and the
    rest of the engine, imported as the panels first get their state, and Textual's own
    start-up. Python's full (generation 2) pass walked them all on the event loop: 179-186
    ms each, the slowest panel switch 219 ms (``python benchmarks/bench_tui_pty.py --frames
    40 --no-freeze``); frozen (``gc.freeze``) they are skipped: 9-10 ms, the slowest switch
    53 ms (the same without ``--no-freeze``). The objects the app makes later are collected
    as before. This freezes what the imports built, after collecting what they left as
    garbage (16-23 ms, once); the app freezes again after its first frame and after its
    first job has started (``Settings.freeze_heap``), the imports those bring included.
    """
    gc.collect()
    gc.freeze()


def main() -> None:
    """Console-script entry point of ``malleability-tui`` (optional argument: a run directory
    or a spec TOML). The front end's error boundary: a bad argument or an unexpected error
    is one line on stderr (a traceback goes to a log file) and a non-zero exit."""
    from malleability_tui.boundary import forget_caught_interrupt

    try:
        _main()
    finally:
        forget_caught_interrupt()


def _main() -> None:
    import sys

    from malleability_tui.boundary import (
        STOP_SIGNALS,
        error_line,
        sigterm_as_interrupt,
        terminal_problem,
        working_dir_problem,
    )

    s = Settings()
    app: MalleabilityApp | None = None
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(
            "usage: malleability-tui [RUN_DIR | SPEC.toml]   (runs folder: $MALLEABILITY_RUNS or ./runs)"
        )
        return
    try:
        if cwd_problem := working_dir_problem():
            raise EngineError(cwd_problem)
        if len(args) > 1:
            raise EngineError(
                f"one argument at most (a run directory or a spec .toml), got {len(args)}"
            )
        if args:
            p = Path(args[0])
            if (p / "spec.toml").exists() or (p / "reproduce.json").exists():
                s.open_run = str(p)
            elif p.is_dir():
                raise EngineError(
                    f"{p}: not a run directory (no spec.toml) nor a reproduction (no reproduce.json)"
                )
            elif not p.exists():
                raise EngineError(f"{p}: no such run directory or spec file")
            elif p.suffix == ".toml":
                s.spec = RunSpec.load(p)
            else:
                raise EngineError(f"{p}: a run directory or a spec .toml file expected")
        if why := terminal_problem():
            raise EngineError(
                f"malleability-tui needs an interactive terminal ({why}); "
                "for scripts use: malleability headless"
            )
        app = make_app(s)
        tui = app

        def stop(signum: int, frame: Any) -> None:
            # SIGTERM / SIGHUP: quit as the quit key does (a running job is cancelled and
            # its run closed), not a KeyboardInterrupt inside Textual's event loop
            import asyncio

            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # before or after the app's loop: the boundary below
                raise KeyboardInterrupt from None
            loop.call_soon_threadsafe(lambda: tui.exit(return_code=130))

        with sigterm_as_interrupt():
            import signal

            for sig in STOP_SIGNALS:
                signal.signal(sig, stop)
            freeze_startup_heap()
            app.settings.freeze_heap = True
            app.run()
    except KeyboardInterrupt:  # Ctrl-C outside Textual, SIGTERM, SIGHUP
        runner = app.runner if app is not None else None
        if runner is not None and runner.running:  # close its run, not leave it "running"
            runner.cancel()
            runner.wait(timeout=20)
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - the boundary: one line, never a traceback
        msg, code = error_line(e)
        print(f"error: {msg}", file=sys.stderr)
        sys.exit(code)
    if app.busy:  # quit by a signal while a job ran: let it close its run
        app.cancel_jobs()
        app.runner.wait(timeout=20)
    if app.return_code:
        if app.return_code == 130:
            print("interrupted", file=sys.stderr)
        sys.exit(app.return_code)


if __name__ == "__main__":
    main()
