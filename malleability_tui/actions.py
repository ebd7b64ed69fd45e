"""The app's actions, once: the key bindings (and so the footer) and the command palette
are both derived from ``ACTIONS``.

An action may have a plain ``key`` (``r``, ``?``: it types in a text field, so it is off
while one has the focus) and a ``field_key`` (``ctrl+r``, ``F4``: it works while typing).
A ``field_key`` gives two bindings: ``action('field')``, shown in the footer only while
typing (see ``allowed``), and a hidden twin for the other times
(``field_only`` drops the twin: ``esc`` leaves a field, it does nothing elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from textual.app import SystemCommand
from textual.binding import Binding

TABS = ("setup", "sweep", "spectra", "flips", "landscape", "training", "runs", "claims")
TAB_TITLES = (
    "1 Setup",
    "2 Sweep",
    "3 Spectra",
    "4 Flips",
    "5 Landscape",
    "6 Training",
    "7 Runs",
    "8 Claims",
)


@dataclass(frozen=True)
class AppAction:
    """One action of the app: its keys, its footer entry and its command-palette entry."""

    name: str
    """The action (``run_job`` → ``MalleabilityApp.action_run_job``)."""
    description: str
    """The footer's label."""
    key: str | None = None
    key_display: str | None = None
    field_key: str | None = None
    field_display: str | None = None
    field_only: bool = False
    arg: str | None = None
    """The action's one argument (``show_tab('sweep')``)."""
    show: bool = True
    """Whether the plain key's binding is in the footer."""
    priority: bool = False
    """Whether the bindings go before the focused widget's (Textual's ``priority``)."""
    field_priority: bool = False
    """Whether the ``field_key``'s bindings are priority bindings."""
    main_only: bool = True
    """An action of the main screen's panels: off while another screen (help, compare) shows."""
    palette_title: str | None = None
    palette_help: str = ""

    @property
    def plain(self) -> bool:
        """A plain-character key: hidden from the footer (and off) while typing in a field."""
        return self.key is not None and (len(self.key) == 1 or self.key == "question_mark")

    def call(self, suffix: str = "") -> str:
        """The action string of a binding (``suffix``: the ``'field'`` argument)."""
        if self.arg is not None:
            return f"{self.name}('{self.arg}')"
        return f"{self.name}({suffix})" if suffix else self.name

    def bindings(self) -> Iterator[Binding]:
        if self.key is not None:
            yield Binding(
                self.key,
                self.call(),
                self.description,
                show=self.show,
                key_display=self.key_display,
                priority=self.priority,
            )
        if self.field_key is not None:
            yield Binding(
                self.field_key,
                self.call("'field'"),
                self.description,
                key_display=self.field_display,
                priority=self.field_priority,
            )
            if not self.field_only:
                yield Binding(
                    self.field_key,
                    self.call(),
                    self.description,
                    show=False,
                    priority=self.field_priority,
                )


ACTIONS: tuple[AppAction, ...] = (
    # One footer entry "1-7 Panels" for the seven panel keys, so the footer fits 80 columns.
    *(
        AppAction(
            "show_tab",
            "Panels" if i == 0 else title.split()[1],
            key=str(i + 1),
            key_display=f"1-{len(TABS)}" if i == 0 else None,
            arg=tab,
            show=i == 0,
            palette_title=f"Show {title.split()[1]}",
            palette_help=f"Switch to panel {i + 1}",
        )
        for i, (tab, title) in enumerate(zip(TABS, TAB_TITLES))
    ),
    # In a text field the plain keys type; ctrl+ and F-keys work there, and the footer
    # shows them instead (check_action: the "field" variants only while typing).
    AppAction(
        "run_job",
        "Run",
        key="r",
        field_key="ctrl+r",
        field_display="^r",
        field_priority=True,
        palette_title="Run",
        palette_help="Run the spec of the Setup panel (r)",
    ),
    AppAction(
        "reproduce",
        "Reproduce",
        palette_title="Reproduce the paper",
        palette_help="Tables 1-4 and the claims for the form's data set (--quick with the "
        "quick preset); the Claims panel fills in as each run ends",
    ),
    AppAction(
        "cancel_job",
        "Cancel",
        key="c",
        palette_title="Cancel job",
        palette_help="Stop the running job, keeping finished cells (c)",
    ),
    AppAction(
        "export",
        "Export",
        key="e",
        palette_title="Export CSVs",
        palette_help="Copy the current run's CSVs to a folder (e)",
    ),
    AppAction(
        "screenshot",
        "Shot",
        key="s",
        main_only=False,
        palette_title="Screenshot",
        palette_help="Save an SVG screenshot of the screen (s)",
    ),
    AppAction(
        "help",
        "Help",
        key="question_mark",
        key_display="?",
        field_key="f1",
        field_display="F1",
        main_only=False,
        palette_title="Help",
        palette_help="Keys and panels (?)",
    ),
    AppAction(
        "leave_field", "Leave field", field_key="escape", field_display="esc", field_only=True
    ),
    AppAction(
        "load_spec",
        "Load",
        key="f2",
        show=False,
        palette_title="Load spec",
        palette_help="Load a run spec TOML into the form (F2)",
    ),
    AppAction(
        "save_spec",
        "Save",
        key="f3",
        show=False,
        palette_title="Save spec",
        palette_help="Save the form as a run spec TOML (F3)",
    ),
    AppAction(
        "quick_preset",
        "Quick",
        field_key="f4",
        field_display="F4",
        palette_title="Quick preset",
        palette_help="Apply the --quick preset to the form (F4)",
    ),
    AppAction(
        "paper_preset",
        "Paper",
        field_key="f6",
        field_display="F6",
        palette_title="Paper preset",
        palette_help="The paper's settings in the form: hours on a CPU (F6)",
    ),
    AppAction(
        "close_error", "Close", key="escape,enter", show=False, priority=True, main_only=False
    ),
    AppAction(
        "quit",
        "Quit",
        key="q",
        field_key="ctrl+q",
        field_display="^q",
        field_priority=True,
        main_only=False,
    ),
)

BINDINGS = [b for a in ACTIONS for b in a.bindings()]
PLAIN_KEY_ACTIONS = frozenset(a.name for a in ACTIONS if a.plain)
MAIN_ONLY_ACTIONS = frozenset(a.name for a in ACTIONS if a.main_only)


def system_commands(target: object) -> Iterator[SystemCommand]:
    """The palette's commands of ``ACTIONS`` calling the ``action_`` methods of ``target``."""
    for a in ACTIONS:
        if a.palette_title is None:
            continue
        method = getattr(target, f"action_{a.name}")
        yield SystemCommand(a.palette_title, a.palette_help, _bound(method, a.arg))


def _bound(method: Callable[..., object], arg: str | None) -> Callable[[], object]:
    return method if arg is None else lambda: method(arg)


def allowed(app: Any, action: str, parameters: tuple) -> bool:
    """The app's ``check_action``: whether ``action`` applies now (False hides its key).

    The error dialog's close only while it is open; nothing after quit but quit (a burst
    of keys typed after ``q`` must not start anything); the main screen's actions only
    there; a ``field_key``'s twin only while typing in a field and a plain key only when
    not; cancel only while a job runs (the footer fits 80 columns).
    """
    from textual.widgets import Input, TextArea

    from malleability_tui.dialogs.error_dialog import ErrorDialog

    if action == "close_error":
        try:
            return bool(app.main_query(ErrorDialog).is_open)
        except Exception:  # noqa: BLE001 - before mount / after unmount
            return False
    if app.quitting and action != "quit":
        return False
    try:
        screen = app.screen
        main = screen is app.screen_stack[0]
    except Exception:  # noqa: BLE001 - before mount / after unmount
        return False
    if action in MAIN_ONLY_ACTIONS and not main:
        return False
    typing = isinstance(screen.focused, (Input, TextArea))
    if parameters[:1] == ("field",):
        return typing
    if action == "cancel_job" and not app.busy:
        return False
    return not (typing and action in PLAIN_KEY_ACTIONS)
