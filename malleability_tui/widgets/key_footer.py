"""KeyFooter: Textual's Footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


def bindings_shown(screen: Screen) -> tuple[Any, ...]:
    """What a footer on ``screen`` draws: every active binding with its state."""
    return tuple(
        (b.key, b.key_display, b.description, b.action, b.show, enabled, tooltip)
        for _node, b, enabled, tooltip in screen.active_bindings.values()
    )


class KeyFooter(Footer):
    """The stock footer recomposes (about 30 widgets mounted and styled) on every
    bindings signal, and a tab switch sends several (blur, focus, tab activated): that
    was most of a tab switch's CPU, measured in issue #14. This one coalesces the
    signals of a frame into one check and recomposes only when the keys differ."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._shown: tuple[Any, ...] | None = None
        self._check_pending = False

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._check_pending:
            self._check_pending = True
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._check_pending = False
        if not self.is_attached:
            return
        shown = bindings_shown(self.screen)
        if shown == self._shown:
            return
        self._shown = shown
        await self.recompose()
