"""ConfirmDialog: a yes/no question before something long (a run estimated over ten minutes)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmDialog(ModalScreen[bool]):
    """Dismisses with True (enter / the first button) or False (escape / Back)."""

    DEFAULT_CSS = """
    ConfirmDialog { align: center middle; }
    ConfirmDialog > Vertical { width: 72; max-width: 95%; height: auto; border: thick $warning;
        background: $surface; padding: 1 2; }
    ConfirmDialog #question { text-style: bold; width: 100%; }
    ConfirmDialog #detail { color: $text-muted; margin: 1 0; width: 100%; }
    ConfirmDialog Horizontal { height: auto; }
    ConfirmDialog Button { margin: 0 2 0 0; }
    ConfirmDialog Button:focus { text-style: bold reverse; }
    """
    BINDINGS = [Binding("escape", "answer(False)", "Back"), Binding("enter", "answer(True)", "OK")]
    AUTO_FOCUS = "#yes"

    def __init__(self, question: str, detail: str = "", yes: str = "OK") -> None:
        super().__init__()
        self.question, self.detail, self.yes = question, detail, yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, id="question")
            yield Static(self.detail, id="detail", markup=False)
            with Horizontal():
                yield Button(f"{self.yes} (enter)", variant="warning", id="yes", compact=True)
                yield Button("Back (escape)", id="no", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
