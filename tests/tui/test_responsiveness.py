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


def test_a_tab_switch_moves_the_underline_with_the_pane_in_one_frame():
    """PanelTabs puts the underline under the new tab when the pane switches, not after the
    next refresh as Textual's Tabs does (the frame showing the new pane underlined the old
    tab); the place it sets is the one Textual's own move gives after the refresh."""
    from textual.widgets import Static, TabPane
    from textual.widgets.tabbed_content import ContentTabs

    from malleability_tui.widgets.panel_tabs import PanelTabs

    class TabsApp(App):
        def __init__(self) -> None:
            super().__init__()
            self.animation_level = "none"

        def compose(self) -> ComposeResult:
            with PanelTabs(id="tabs"):
                for name in ("one", "two", "three"):
                    with TabPane(f"{name} tab", id=name):
                        yield Static(name)

    async def go() -> None:
        app = TabsApp()
        async with app.run_test(size=(60, 10)) as pilot:
            await pilot.pause()
            tc = app.query_one(PanelTabs)
            underline = app.query_one(ContentTabs).query_one("Underline")
            for name in ("three", "two", "one"):
                tab = tc.get_tab(name)
                want = tab.virtual_region.shrink(tab.styles.gutter).column_span
                tc.active = name  # no await: no refresh in between
                assert (underline.highlight_start, underline.highlight_end) == want
                assert underline.show_highlight
                await pilot.pause()  # Textual's own move, after the refresh, agrees
                assert (underline.highlight_start, underline.highlight_end) == want

    asyncio.run(go())


def test_a_panel_key_shows_the_new_pane_and_its_tab_in_the_first_frame(tmp_path):
    """The first frame the app writes after a panel key has the new pane laid out, the
    underline under its tab and the pane's keys in the footer. (The switch used to reach
    the screen in pieces: the pane a frame or two after the tab bar, since the screen's
    update timer ran before the panes' layout requests reached it, and the footer's keys
    ~30 ms after the pane; ``bench_tui_pty.py --frames`` on the commit before.)"""
    from textual.errors import NoWidget
    from textual.widgets import TabPane
    from textual.widgets.tabbed_content import ContentTabs
    from tui_support import make_test_app

    from malleability_tui.widgets.panel_tabs import PanelTabs

    async def go() -> None:
        app = make_test_app(tmp_path)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            tc = app.query_one(PanelTabs)
            underline = app.query_one(ContentTabs).query_one("Underline")
            footer = app.query_one(KeyFooter)
            frames: list[tuple[bool, bool, object]] = []
            target: list[str] = []
            display = app._display

            def record(screen, renderable) -> None:
                if renderable is not None and target:
                    pane = app.query_one(f"#{target[0]}", TabPane)
                    tab = tc.get_tab(target[0])
                    span = tab.virtual_region.shrink(tab.styles.gutter).column_span
                    try:
                        app.screen.find_widget(pane)
                        laid_out = True
                    except NoWidget:
                        laid_out = False
                    at_tab = (underline.highlight_start, underline.highlight_end) == span
                    frames.append((laid_out, at_tab, footer._items))
                display(screen, renderable)

            app._display = record  # type: ignore[method-assign]
            for key, tab in zip("34528761", ("spectra", "flips", "landscape", "sweep",
                                             "claims", "runs", "training", "setup")):  # fmt: skip
                target[:] = [tab]
                frames.clear()
                await pilot.press(key)
                await pilot.pause()
                assert tc.active == tab
                assert frames, f"no frame after {key}"
                pane_keys = footer._items
                first = frames[0]
                assert first[:2] == (True, True), f"{key}: first frame (pane, tab) {frames}"
                assert first[2] == pane_keys, f"{key}: the first frame's footer is not the pane's"

    asyncio.run(go())


def test_the_tab_bar_fits_80_columns_and_never_scrolls(tmp_path):
    """The 8 tabs fit an 80-column terminal: no tab is cut and switching never scrolls the
    bar (it was 81 columns: it shifted a column on 5 and back on 1)."""
    from textual.widgets.tabbed_content import ContentTabs
    from tui_support import make_test_app

    async def go() -> None:
        app = make_test_app(tmp_path)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            tabs = app.query_one(ContentTabs).query_one("#tabs-scroll")
            assert tabs.max_scroll_x == 0
            for key in "5813":
                await pilot.press(key)
                await pilot.pause()
                assert tabs.scroll_x == 0
            top = screen_text(app).splitlines()[0]
            assert top.startswith("1 Setup") and top.endswith("8 Claims")

    asyncio.run(go())


def test_a_click_on_a_tab_switches_and_focuses_the_pane(tmp_path):
    """The mouse path (Textual's tab click, then the app's TabActivated handler) still
    switches in one go and lands the focus in the new pane, its keys in the footer."""
    from textual.widgets import TabPane
    from tui_support import make_test_app, write_run

    from malleability_tui.widgets.panel_tabs import PanelTabs

    async def go() -> None:
        app = make_test_app(tmp_path, open_run=write_run(tmp_path / "run"))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            tc = app.query_one(PanelTabs)
            for tab in ("runs", "landscape", "setup"):
                await pilot.click(f"#--content-tab-{tab}")
                await pilot.pause()
                await pilot.pause()
                assert tc.active == tab
                pane = app.query_one(f"#{tab}", TabPane)
                focused = app.screen.focused
                assert focused is not None and pane in focused.ancestors_with_self, tab
            assert "t Surface" not in screen_text(app).splitlines()[-1]
            await pilot.click("#--content-tab-landscape")
            await pilot.pause()
            await pilot.pause()
            assert "t Surface" in screen_text(app).splitlines()[-1]

    asyncio.run(go())


def test_malleability_tui_freezes_the_start_up_heap_and_the_app_freezes_after_mount(
    tmp_path, monkeypatch
):
    """``malleability-tui`` takes start-up's objects out of the collector's full passes
    before the app runs (full passes over them took ~180 ms and stalled a panel switch:
    ``bench_tui_pty.py --frames 40 --no-freeze``), and the app freezes again after its
    first frame when its settings ask; an app built by a test (settings unchanged) leaves
    the process's collector alone."""
    import gc
    import sys

    from tui_support import make_test_app

    import malleability_tui.boundary as boundary
    from malleability_tui.app import MalleabilityApp
    from malleability_tui.launch import _main

    seen: dict[str, object] = {}

    def fake_run(self, *a, **k):
        seen["frozen"] = gc.get_freeze_count()
        seen["asks"] = self.settings.freeze_heap

    gc.unfreeze()
    monkeypatch.setattr(MalleabilityApp, "run", fake_run)
    monkeypatch.setattr(boundary, "terminal_problem", lambda: None)
    monkeypatch.setattr(sys, "argv", ["malleability-tui"])
    monkeypatch.setenv("MALLEABILITY_RUNS", str(tmp_path / "runs"))
    try:
        _main()
        assert seen["asks"] is True
        assert isinstance(seen["frozen"], int) and seen["frozen"] > 50_000
    finally:
        gc.unfreeze()

    async def go(freeze: bool) -> int:
        app = make_test_app(tmp_path)
        app.settings.freeze_heap = freeze
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.pause()
            return gc.get_freeze_count()

    try:
        assert asyncio.run(go(False)) == 0
        assert asyncio.run(go(True)) > 0
    finally:
        gc.unfreeze()


def test_the_app_freezes_once_more_after_its_first_job_only(tmp_path, monkeypatch):
    """After the first frame, and once after the first job has started (its imports), not
    after every job: a run state frozen with each job would never be collected."""
    import gc

    from tui_support import make_test_app, wait_job

    calls: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(1))

    async def go() -> list[int]:
        app = make_test_app(tmp_path)
        app.settings.freeze_heap = True
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.pause()
            counts = [len(calls)]
            for _ in range(2):
                await pilot.press("ctrl+r")
                await wait_job(pilot, app)
                counts.append(len(calls))
            return counts

    assert asyncio.run(go()) == [1, 2, 2]
