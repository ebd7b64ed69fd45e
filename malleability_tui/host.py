"""What the app's controllers (``jobs``, ``opening``) and its main screen ask of the app:
``MalleabilityApp`` as a Protocol. They are handed the app; naming its class would import
``app`` back from the modules it imports (a circle, tests/test_import_graph.py)."""

from __future__ import annotations

from typing import Any, Protocol

from engine.run.spec import RunSpec
from malleability_tui.settings import Settings
from malleability_tui.state import RunState


class AppHost(Protocol):
    """The app's state and the calls its controllers make (the methods take anything:
    their signatures are the app's and Textual's, checked where they are defined)."""

    settings: Settings
    state: RunState
    valid_spec: RunSpec | None
    quitting: bool

    @property
    def runner(self) -> Any: ...

    @property
    def reproduction(self) -> Any: ...

    @property
    def jobs(self) -> Any: ...

    @property
    def runs(self) -> Any: ...

    @property
    def screen_stack(self) -> Any: ...

    def notify(self, *args: Any, **kwargs: Any) -> Any: ...

    def push_screen(self, *args: Any, **kwargs: Any) -> Any: ...

    def call_after_refresh(self, *args: Any, **kwargs: Any) -> Any: ...

    def exit(self, *args: Any, **kwargs: Any) -> Any: ...

    def refresh_bindings(self, *args: Any, **kwargs: Any) -> Any: ...

    def main_query(self, *args: Any, **kwargs: Any) -> Any: ...

    def main_ready(self, *args: Any, **kwargs: Any) -> Any: ...

    def freeze_heap(self, *args: Any, **kwargs: Any) -> Any: ...

    def show_error(self, *args: Any, **kwargs: Any) -> Any: ...

    def action_show_tab(self, *args: Any, **kwargs: Any) -> Any: ...

    @property
    def main(self) -> Any: ...

    @property
    def busy(self) -> bool: ...
