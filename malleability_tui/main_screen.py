"""The main screen: the tabbed panels, the status bar, the error dialog and the footer,
and the wiring that hands them the app's run state.

The app (app.py) holds the state and the job and run controllers (jobs.py, opening.py);
this screen lays out the widgets, gives each panel the state when it changed (the
visible one only while a job streams) and moves the focus with the tabs. The messages of
its widgets (runs browser, claims checklist, setup form) are handled here and passed on
to the controllers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane

from malleability_tui.actions import TAB_TITLES, TABS
from malleability_tui.dialogs.error_dialog import ErrorDialog
from malleability_tui.settings import experiment_names, first_spec
from malleability_tui.state import RunState
from malleability_tui.widgets.claims_panel import ClaimsPanel
from malleability_tui.widgets.flips_panel import FlipsPanel
from malleability_tui.widgets.key_footer import KeyFooter
from malleability_tui.widgets.landscape_panel import LandscapePanel
from malleability_tui.widgets.panel_tabs import PanelTabs
from malleability_tui.widgets.runs_browser import RunsBrowser
from malleability_tui.widgets.setup_form import SetupForm, data_choices
from malleability_tui.widgets.spectra_panel import SpectraPanel
from malleability_tui.widgets.status_bar import StatusBar
from malleability_tui.widgets.sweep_panel import SweepPanel
from malleability_tui.widgets.training_panel import TrainingPanel

if TYPE_CHECKING:
    from malleability_tui.host import AppHost

PANELS = {
    "claims": ClaimsPanel,
    "sweep": SweepPanel,
    "spectra": SpectraPanel,
    "flips": FlipsPanel,
    "landscape": LandscapePanel,
    "training": TrainingPanel,
}
"""The tabs that show a run (each a panel with a ``state`` attribute)."""

FOCUS_TARGET = {
    "setup": "#setup-form",
    "runs": "#runs-table",
    "flips": "#flip-table",
    "claims": "#claims-table",
}
"""The widget a tab focuses when shown (else its panel)."""


class MainScreen(Screen):
    """The app's first screen (``App.get_default_screen``): every panel of a run."""

    def __init__(self) -> None:
        super().__init__()
        self._shown_revision = -1
        self._panel_shown: dict[str, tuple[RunState, int]] = {}
        """Panel → (state, revision) it last got (see ``give_state``)."""

    @property
    def owner(self) -> AppHost:
        """The app, with its state and controllers."""
        return cast("AppHost", self.app)

    def compose(self) -> ComposeResult:
        s = self.owner.settings
        spec = s.spec or first_spec(s.runs_root)
        choices = s.data_choices if s.data_choices is not None else data_choices(s.data_root)
        exps = s.experiments if s.experiments is not None else experiment_names()
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
        self.owner.main_ready()

    # -- pushing the state down -------------------------------------------------------------

    @property
    def stale(self) -> bool:
        """The app's state moved since the panels last got it."""
        return self.owner.state.revision != self._shown_revision

    def push_state(self, force: bool = False) -> None:
        """Give the panels the state (only the visible one while a job streams)."""
        active = self.query_one(TabbedContent).active
        for tab in PANELS:
            if force or tab == active:
                self.give_state(tab)
        self._shown_revision = self.owner.state.revision
        self.update_status()

    def give_state(self, tab: str) -> None:
        """Hand ``tab``'s panel the state unless it already shows this revision of it: a
        panel rebuilds its charts on every hand-over, and a tab switch must not pay that."""
        state = self.owner.state
        shown = self._panel_shown.get(tab)
        if shown is not None and shown[0] is state and shown[1] == state.revision:
            return
        self.query_one(f"#{tab}-panel").state = state  # type: ignore[attr-defined]
        self._panel_shown[tab] = (state, state.revision)

    def update_status(self) -> None:
        """The status bar: the state's status and progress, the job's clock."""
        self.query_one(StatusBar).show(self.owner.state, self.owner.jobs.elapsed())

    # -- tabs and focus ---------------------------------------------------------------------

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id if event.pane is not None else None
        if not self.app.screen_stack:
            return  # shutting down
        if tab in PANELS:
            self.give_state(tab)
        if tab:
            self.call_after_refresh(self.focus_pane, tab)

    def show_tab(self, tab: str) -> None:
        """Switch to ``tab`` and focus its main widget."""
        tc = self.query_one(TabbedContent)
        if tc.active == tab:
            self.focus_pane(tab)
        else:
            # Blur first: a focused widget left in the hidden pane would pull it back.
            self.set_focus(None)
            tc.active = tab
            # Focus the pane now, before the frame that shows it (the TabActivated handler
            # does it after that frame, for a click on a tab): the pane's keys then reach the
            # footer in the same frame, not one or two frames later (~30 ms, bench_tui_pty).
            self.focus_pane(tab)

    def focus_pane(self, tab: str) -> None:
        """Focus the pane's main widget so its keys (shown in the footer) work at once.

        Only when ``tab`` is still the active pane and focus is not already inside it:
        focusing a widget of another pane makes TabbedContent switch to that pane.
        """
        tc = self.query_one(TabbedContent)
        if not self.app.screen_stack or tc.active != tab or self.query_one(ErrorDialog).is_open:
            return
        focused = self.focused
        pane = self.query_one(f"#{tab}", TabPane)
        if focused is not None and pane in focused.ancestors_with_self:
            return
        widget = self.query_one(FOCUS_TARGET.get(tab, f"#{tab}-panel"))
        if not widget.display:
            return  # the claims table while no reproduction is open
        # set_focus now, not Widget.focus() (deferred): a panel key handled in between would
        # see this focus land in the pane it just left, which switched back to it.
        self.set_focus(widget)

    # -- the widgets' messages --------------------------------------------------------------

    def on_setup_form_spec_changed(self, message: SetupForm.SpecChanged) -> None:
        self.owner.valid_spec = message.spec

    def on_runs_browser_refresh(self, message: RunsBrowser.Refresh) -> None:
        self.owner.runs.refresh()

    def on_runs_browser_open_run(self, message: RunsBrowser.OpenRun) -> None:
        self.owner.runs.open(message.path)

    def on_runs_browser_resume_run(self, message: RunsBrowser.ResumeRun) -> None:
        self.owner.runs.resume(message.path)

    def on_runs_browser_compare_runs(self, message: RunsBrowser.CompareRuns) -> None:
        self.owner.runs.compare(message.a, message.b)

    def on_claims_panel_show_claim(self, message: ClaimsPanel.ShowClaim) -> None:
        self.owner.runs.show_claim(message.item)
