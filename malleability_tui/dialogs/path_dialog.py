"""PathDialog: ask for a file or folder path (load/save spec, export folder)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PathDialog(ModalScreen[str | None]):
    """Dismisses with the path typed (Enter) or None (Escape). ``check(path)``: the one-line
    reason a path is refused (the dialog stays open and shows it), or None."""

    DEFAULT_CSS = """
    PathDialog { align: center middle; }
    PathDialog > Vertical { width: 72; max-width: 95%; height: auto; border: thick $accent;
        background: $surface; padding: 1 2; }
    PathDialog #prompt { text-style: bold; }
    PathDialog #keys { color: $text-muted; }
    PathDialog #error { color: $error; display: none; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    AUTO_FOCUS = "#path"
    """Focused by the screen itself once composed (an ``on_mount`` query could run before
    the input exists when the app is already closing: the ``qe`` burst)."""

    def __init__(
        self, prompt: str, initial: str = "", check: Callable[[str], str | None] | None = None
    ) -> None:
        super().__init__()
        self.prompt = prompt
        self.initial = initial
        self.check = check
        self._answered = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.prompt, id="prompt")
            yield Input(self.initial, id="path")
            yield Label("", id="error")
            yield Label("enter: OK · escape: cancel", id="keys")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip() or None
        refused = self.check(value) if value and self.check else None
        if refused:
            error = self.query_one("#error", Label)
            error.update(refused)
            error.display = True
            return
        self._close(value)

    def action_cancel(self) -> None:
        self._close(None)

    def _close(self, value: str | None) -> None:
        """Dismiss once: a second Enter (or Escape) queued before the screen is gone must
        not pop the screen below it (ScreenStackError: key spam killed the TUI)."""
        if self._answered:
            return
        self._answered = True
        self.dismiss(value)
