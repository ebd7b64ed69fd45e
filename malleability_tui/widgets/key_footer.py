"""KeyFooter: the key bar at the bottom, one widget redrawn only when its keys change.

Textual's ``Footer`` is a container of one ``FooterKey`` widget per key, and it recomposes
(unmounts, mounts and styles about 30 widgets, then lays the screen out again) on every
bindings signal; a tab switch sends several (blur, focus, tab activated). That was the
largest part of a tab switch's CPU, which the training job under the TUI pays on 2 cores
(``python benchmarks/bench_tab_switch.py``: 200 → 117 ms per switch with animations on). This widget draws the same line (the compact footer's look:
bold key, description, the command palette's key on the right) as one piece of text, and
redraws it only when the keys shown differ. A click on a key presses it, as the stock
footer's does. Left out, as this app does not use them: binding groups, per-key tooltips
and horizontal scrolling of a footer wider than the screen.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget


@dataclass(frozen=True)
class FooterItem:
    """One key as the footer shows it."""

    key: str
    display: str
    description: str
    enabled: bool


def footer_items(
    screen: Screen, *, palette: bool = True
) -> tuple[tuple[FooterItem, ...], FooterItem | None]:
    """The keys a footer on ``screen`` shows: the first shown binding of each action, in
    order, and the command palette's key (or None)."""
    app = screen.app
    seen: set[str] = set()
    items = []
    active = screen.active_bindings
    for _node, b, enabled, _tooltip in active.values():
        if not b.show or b.action in seen:
            continue
        seen.add(b.action)
        items.append(FooterItem(b.key, app.get_key_display(b), b.description, enabled))
    pal = None
    if palette and app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
        _node, b, enabled, _tooltip = active[app.COMMAND_PALETTE_BINDING]
        pal = FooterItem(b.key, app.get_key_display(b), b.description, enabled)
    return tuple(items), pal


class KeyFooter(Widget, can_focus=False):
    """The active keys in one line; click a key to press it."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-footer--key", "key-footer--description", "key-footer--rule"}
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
        text-wrap: nowrap;
        .key-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .key-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .key-footer--rule {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self, *, show_command_palette: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.show_command_palette = show_command_palette
        self._items: tuple[tuple[FooterItem, ...], FooterItem | None] = ((), None)
        self._spans: list[tuple[int, int, FooterItem]] = []
        self._check_pending = False
        self.redraws = 0
        """How many times the keys changed (tests)."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._check()

    def _bindings_changed(self, screen: Screen) -> None:
        # Several signals arrive per focus change: one check once the messages in hand are
        # handled. (After the next refresh, as it was, put the new keys a frame or two
        # behind the panel switch that changed them.)
        if screen is self.screen and not self._check_pending:
            self._check_pending = True
            self.call_later(self._check)

    def _check(self) -> None:
        self._check_pending = False
        if not self.is_attached:
            return
        items = footer_items(self.screen, palette=self.show_command_palette)
        if items != self._items:
            self._items = items
            self.redraws += 1
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-footer--key")
        desc_style = self.get_component_rich_style("key-footer--description")
        width = self.size.width
        keys, pal = self._items
        right = Text()
        if pal is not None:
            right.append("▏", self.get_component_rich_style("key-footer--rule"))
            right.append(pal.display, key_style)
            right.append(f" {pal.description} ", desc_style)
            if not pal.enabled:
                right.stylize("dim")
        line = Text(no_wrap=True, overflow="crop")
        spans: list[tuple[int, int, FooterItem]] = []
        for item in keys:
            start = line.cell_len
            piece = Text.assemble((item.display, key_style), (f" {item.description}", desc_style))
            if not item.enabled:
                piece.stylize("dim")
            line.append_text(piece)
            spans.append((start, line.cell_len, item))
            line.append(" ")
        room = max(0, width - right.cell_len)
        line.truncate(room, overflow="crop", pad=True)
        self._spans = [(a, min(b, room), it) for a, b, it in spans if a < room]
        if pal is not None and right.cell_len <= width:
            line.append_text(right)
            self._spans.append((room, width, pal))
        return line

    def on_mouse_down(self, event: events.MouseDown) -> None:
        for start, end, item in self._spans:
            if start <= event.x < end:
                if item.enabled:
                    self.app.simulate_key(item.key)
                else:
                    self.app.bell()
                return
