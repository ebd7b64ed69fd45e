"""Responsiveness (issue #14): KeyFooter redraws only when the keys it shows change (the
stock footer remounted ~30 widgets several times per tab switch; benchmarks/
bench_tab_switch.py), a click on a key presses it, and the app runs without animations."""

import asyncio

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Button
from tui_support import screen_text

from malleability_tui.widgets.key_footer import KeyFooter


class Plain(Button):
    pass


class WithKey(Button):
    BINDINGS = [Binding("m", "more", "metric"), Binding("x", "more", "hidden", show=False)]

    def action_more(self) -> None:
        self.app.pressed.append("m")


class FooterApp(App):
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("ctrl+r", "noop", "Run")]

    def __init__(self) -> None:
        super().__init__()
        self.pressed: list[str] = []

    def compose(self) -> ComposeResult:
        yield Plain("a", id="a")
        yield Plain("b", id="b")
        yield WithKey("c", id="c")
        yield KeyFooter()

    def action_noop(self) -> None:
        pass


def test_footer_redraws_only_when_its_keys_change_and_a_click_presses_the_key():
    async def go() -> None:
        app = FooterApp()
        async with app.run_test(size=(60, 10)) as pilot:
            footer = app.query_one(KeyFooter)
            app.query_one("#a").focus()
            await pilot.pause()
            line = screen_text(app).splitlines()[-1]
            assert line.startswith("q Quit ^r Run") and line.rstrip().endswith("^p palette")
            assert "metric" not in line and "hidden" not in line
            base = footer.redraws
            for target in ("#b", "#a", "#b"):  # the same keys: signals, no redraw
                app.query_one(target).focus()
                await pilot.pause()
            assert footer.redraws == base
            app.query_one("#c").focus()  # a key appears: one redraw, and it shows
            await pilot.pause()
            assert footer.redraws == base + 1
            line = screen_text(app).splitlines()[-1]
            assert line.startswith("m metric q Quit") and "hidden" not in line
            await pilot.click(KeyFooter, offset=(0, 0))  # on "m"
            await pilot.pause()
            assert app.pressed == ["m"]
            app.query_one("#a").focus()  # and goes
            await pilot.pause()
            assert footer.redraws == base + 2
            assert "metric" not in screen_text(app).splitlines()[-1]

    asyncio.run(go())


def test_footer_crops_its_keys_before_the_palette_key():
    async def go() -> None:
        app = FooterApp()
        async with app.run_test(size=(20, 5)) as pilot:
            app.query_one("#a").focus()
            await pilot.pause()
            line = screen_text(app).splitlines()[-1]
            assert len(line) <= 20 and line.rstrip().endswith("^p palette")
            assert line.startswith("q Quit")  # "^r Run" cropped: no room

    asyncio.run(go())


def test_the_app_runs_without_animations_unless_asked(monkeypatch):
    """The tab underline's slide cost ~60 ms CPU per switch beside a job (issue #14)."""
    from malleability_tui.app import MalleabilityApp

    monkeypatch.delenv("TEXTUAL_ANIMATIONS", raising=False)
    assert MalleabilityApp().animation_level == "none"
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "full")
    assert MalleabilityApp().animation_level == "full"
