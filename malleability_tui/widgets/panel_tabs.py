"""PanelTabs: the app's TabbedContent, deaf to focus messages that arrive too late."""

from __future__ import annotations

from textual.widgets import TabbedContent, TabPane


class PanelTabs(TabbedContent):
    """A TabbedContent that ignores a stale ``TabPane.Focused``.

    TabbedContent switches to a pane when something inside it takes the focus, through a
    message. The app focuses a pane's main widget just after showing it; when the next
    panel key arrives before that message is handled (fast typing, a loaded machine), the
    late message switched back to the previous pane and the key was lost (about 1 key in
    100 under a job, benchmarks/bench_tui_latency.py). By then the focus has left that pane
    (the app blurs before each switch), so a message whose pane no longer holds the focus
    is dropped; a focus that is still inside its pane switches as before.
    """

    def on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        focused = self.screen.focused
        if focused is None or event.tab_pane not in focused.ancestors_with_self:
            event.prevent_default()  # skip TabbedContent's own handler: no switch
