"""PanelTabs: the app's TabbedContent: its whole tab switch in one frame, and deaf to focus
messages that arrive too late."""

from __future__ import annotations

from typing import Any

from textual.css.query import NoMatches
from textual.widgets import TabbedContent, TabPane
from textual.widgets.tabbed_content import ContentTabs


class PanelTabs(TabbedContent):
    """A TabbedContent that moves its underline with the switch and ignores a stale
    ``TabPane.Focused``.

    **The underline.** Textual's Tabs moves the underline under the new tab only after the
    next refresh (it reads the tab's place from the new layout): the frame that shows the
    new pane still underlines the old tab, and the tab bar catches up a frame later (one
    or two frame times, 17-33 ms at 60 fps, on every switch; ``bench_tui_pty.py`` saw the
    panel 26 ms before the tab bar in a stock 8-tab app). The tabs never move when the
    pane changes, so their places in the current layout are the new ones: without
    animations the underline is set at once. (With animations on, Textual's slide is left
    as it is.)

    **The layout.** The switch asks the screen for a layout at once. Left to the panes'
    own layout requests, the screen's update timer often ran before those reached the
    screen: the first frame was a repaint without the new pane, and the pane came one or
    two frame times later (with the underline moved alone, the tab bar showed a frame or
    two before the pane). With both, the tab bar and the pane show in the same frame
    (``bench_tui_pty.py --frames``).

    **Late focus messages.** TabbedContent switches to a pane when something inside it
    takes the focus, through a message. The app focuses a pane's main widget as it shows
    it; when the next panel key arrives before that message is handled (fast
    typing, a loaded machine), the late message switched back to the previous pane and the
    key was lost (about 1 key in 100 under a job, benchmarks/bench_tui_latency.py). By then
    the focus has left that pane (the app blurs before each switch), so a message whose pane
    no longer holds the focus is dropped; a focus that is still inside its pane switches as
    before.
    """

    def _watch_active(self, active: str) -> None:
        super()._watch_active(active)
        if active and self.app.animation_level == "none":
            self._underline_now()
        if self.is_mounted:
            self.screen.refresh(layout=True)

    def _underline_now(self) -> None:
        """Put the underline under the active tab now, from the tabs' current places."""
        tabs = self.get_child_by_type(ContentTabs)
        try:
            tab = tabs.query_one("#tabs-list > Tab.-active")
            underline: Any = tabs.query_one("Underline")  # Textual's, not exported: by name
        except NoMatches:
            return
        region = tab.virtual_region.shrink(tab.styles.gutter)
        if not region.width:
            return  # not laid out yet (mounting): Textual's own move after the refresh places it
        underline.show_highlight = True
        underline.highlight_start, underline.highlight_end = region.column_span

    def on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        focused = self.screen.focused
        if focused is None or event.tab_pane not in focused.ancestors_with_self:
            event.prevent_default()  # skip TabbedContent's own handler: no switch
