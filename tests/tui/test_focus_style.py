"""A panel switch restyles the focused panel alone, not its subtree (RestyleSelfOnFocus):
Textual's default restyled the setup form's ~100 descendants on every switch to and from
it (benchmarks/bench_tui_pty.py)."""

from __future__ import annotations

from pathlib import Path

from tui_support import make_test_app


async def test_switching_panels_restyles_the_panels_alone(tmp_path: Path) -> None:
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        form = app.query_one("#setup-form")
        sweep = app.query_one("#sweep-panel")
        sizes: list[int] = []
        update = app.stylesheet.update_nodes

        def counting(nodes, animate=False):  # type: ignore[no-untyped-def]
            nodes = list(nodes)
            if form in nodes or sweep in nodes:
                sizes.append(len(nodes))
            return update(nodes, animate=animate)

        app.stylesheet.update_nodes = counting  # type: ignore[method-assign]
        for key in ("2", "1", "2"):
            await pilot.press(key)
            await pilot.pause()
        assert app.focused is sweep
        assert sizes and max(sizes) == 1, sizes
        assert len(list(form.walk_children())) > 50  # what a subtree restyle would cost
