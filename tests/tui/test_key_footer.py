"""KeyFooter recomposes only when the keys it shows change (issue #14: the stock footer
rebuilt itself several times per tab switch, most of a switch's CPU)."""

import asyncio

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Button
from textual.widgets._footer import FooterKey

from malleability_tui.widgets.key_footer import KeyFooter


class Plain(Button):
    pass


class WithKey(Button):
    BINDINGS = [Binding("m", "noop", "metric")]

    def action_noop(self) -> None:
        pass


class FooterApp(App):
    BINDINGS = [Binding("q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Plain("a", id="a")
        yield Plain("b", id="b")
        yield WithKey("c", id="c")
        yield KeyFooter(compact=True)


def _keys(app: App) -> list[str]:
    return [k.key for k in app.query_one(KeyFooter).query(FooterKey)]


def test_footer_recomposes_only_when_its_keys_change():
    async def go() -> None:
        app = FooterApp()
        async with app.run_test(size=(80, 10)) as pilot:
            footer = app.query_one(KeyFooter)
            calls = []
            original = footer.recompose

            async def counting() -> None:
                calls.append(app.focused.id if app.focused else None)
                await original()

            footer.recompose = counting  # type: ignore[method-assign]
            app.query_one("#a").focus()
            await pilot.pause()
            assert "m" not in _keys(app) and "q" in _keys(app)
            base = len(calls)
            for target in ("#b", "#a", "#b"):  # the same keys: signals, no rebuild
                app.query_one(target).focus()
                await pilot.pause()
            assert len(calls) == base
            app.query_one("#c").focus()  # a key appears: one rebuild, and it shows
            await pilot.pause()
            assert len(calls) == base + 1
            assert "m" in _keys(app)
            app.query_one("#a").focus()  # and goes
            await pilot.pause()
            assert len(calls) == base + 2
            assert "m" not in _keys(app)

    asyncio.run(go())
