"""Ctrl+P with a page key pressed in the same instant (issue #42): the command palette's
list is not laid out yet when PageDown arrives, and Textual's page move raised KeyError,
ending the app (3 of 3 tries); with a pause between the keys it did not."""

from __future__ import annotations

import pytest
from textual import events
from textual.command import CommandList, CommandPalette
from tui_support import make_test_app


def send_at_once(app, *keys: str) -> None:
    """Queue ``keys`` to the app as the terminal driver would, with no wait between them
    (``pilot.press`` lets the app settle after each key, which hides the race)."""
    for key in keys:
        event = events.Key(key, None)
        event.set_sender(app)
        app._driver.send_message(event)


@pytest.mark.parametrize("page", ["pagedown", "pageup"])
async def test_a_page_key_pressed_with_ctrl_p_does_not_end_the_app(tmp_path, page) -> None:
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        send_at_once(app, "ctrl+p", page)
        await pilot.pause(0.2)
        assert app.is_running and CommandPalette.is_open(app)
        # laid out now: the page keys move through the commands as Textual's own do
        commands = app.screen.query_one(CommandList)
        await pilot.press("down")
        start = commands.highlighted
        assert commands.option_count > 3 and start is not None
        await pilot.press("pagedown")
        paged = commands.highlighted
        assert paged is not None and paged > start
        await pilot.press("pageup")
        assert commands.highlighted is not None and commands.highlighted < paged
        await pilot.press("escape")
        assert not CommandPalette.is_open(app)
    assert app.return_code in (None, 0)
