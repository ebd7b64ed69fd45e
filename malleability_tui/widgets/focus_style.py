"""RestyleSelfOnFocus: a focus change restyles the widget alone, not its subtree."""

from __future__ import annotations

from typing import Any


class RestyleSelfOnFocus:
    """For a focusable container whose descendants no rule styles by its focus (no
    ``Panel:focus Child`` rule): Textual restyles a widget and every descendant when its
    focus changes, which on a panel switch (focus leaves one panel, lands on the next)
    cost 50-190 ms for the setup form's ~100 nodes and 5-25 ms for a chart panel on 2
    loaded cores (``benchmarks/bench_tui_pty.py --profile``). The widget's own styles are
    all that can change, so only they are recomputed.

    A plain mixin, listed before the widget's Textual base: Textual takes a widget's
    default CSS from its first DOM base, which stays the container."""

    app: Any

    def watch_has_focus(self, _has_focus: bool) -> None:
        try:
            self.app.stylesheet.update_nodes([self], animate=True)
        except Exception:  # noqa: BLE001 - no active app (unmounting): nothing to style
            pass
