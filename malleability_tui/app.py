"""The Textual app (placeholder until the TUI issue lands)."""

from __future__ import annotations

from typing import Any


def make_app(settings: Any = None, runner: Any = None) -> Any:
    """Build the app (the one way to build it; tests inject a fake runner)."""
    from textual.app import App, ComposeResult
    from textual.widgets import Footer, Header, Static

    class MalleabilityApp(App):
        TITLE = "malleability"
        BINDINGS = [("q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Header()
            yield Static("malleability: use `malleability headless --help` for batch runs.")
            yield Footer()

    return MalleabilityApp()


def main() -> None:
    """Console-script entry point of ``malleability-tui``."""
    make_app().run()
