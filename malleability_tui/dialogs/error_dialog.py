"""ErrorDialog: an expected failure, shown without a traceback; the app keeps running.

An overlay on the main screen rather than a pushed screen: a job can fail within
milliseconds of starting (a missing data set), while the tab switch of the start
is still re-rendering the footer, and pushing a screen at that moment can
deadlock Textual; showing a widget cannot.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Button, Label, Static


class ErrorDialog(Container):
    """Hidden until ``show``; Enter/Escape/OK closes it and gives focus back."""

    DEFAULT_CSS = """
    ErrorDialog { layer: overlay; width: 100%; height: 100%; align: center middle;
        background: $background 60%; display: none; }
    ErrorDialog.-open { display: block; }
    ErrorDialog > Vertical { width: 70; max-width: 95%; height: auto; max-height: 90%;
        border: thick $error; background: $surface; padding: 1 2; }
    ErrorDialog #err-title { text-style: bold; color: $error; width: 100%; }
    ErrorDialog #err-message { margin: 1 0; height: auto; width: 100%; }
    ErrorDialog Button { width: 100%; }
    """
    BINDINGS = [Binding("escape,enter", "close", "Close", priority=True)]

    is_open: reactive[bool] = reactive(False)

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.title_text = ""
        self.body = ""
        self._return_focus: Widget | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("", id="err-title")
            yield Static("", id="err-message", markup=False)
            yield Button("OK", variant="error", id="err-ok", compact=True)

    def show(self, title: str, message: str) -> None:
        self.title_text, self.body = title, message
        self.query_one("#err-title", Label).update(title)
        self.query_one("#err-message", Static).update(message)
        if not self.is_open:
            self._return_focus = self.app.focused
        self.is_open = True

    def watch_is_open(self, is_open: bool) -> None:
        self.set_class(is_open, "-open")
        if is_open:
            self.call_after_refresh(self.query_one("#err-ok", Button).focus)
        elif self._return_focus is not None and self._return_focus.is_attached:
            self._return_focus.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.is_open = False

    def action_close(self) -> None:
        self.is_open = False

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # Only swallow Enter/Escape while the dialog is showing.
        return self.is_open if action == "close" else True
