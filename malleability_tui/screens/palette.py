"""The command palette (Ctrl+P), guarded against a key that arrives before it is laid out.

Textual's ``OptionList._move_page`` looks the highlighted option up in its line cache,
which is filled on the first layout; a PageDown or PageUp pressed together with Ctrl+P
(a paste, a fast typist, a key-repeat) reaches the list before that and raised KeyError,
ending the app (textual 8.2.8, the latest release, still does). Until the list has a size
a page move has nowhere to go, so it is dropped; every other key passes as before.
"""

from __future__ import annotations

from textual.command import CommandList, CommandPalette

PAGE_ACTIONS = ("page_down", "page_up")


class SafeCommandPalette(CommandPalette):
    """Textual's command palette, whose page moves wait until its list is laid out."""

    def _action_command_list(self, action: str) -> None:
        if action in PAGE_ACTIONS:
            lists = self.query(CommandList)
            if not lists or not lists.first().scrollable_content_region:
                return  # not laid out yet: no page to move by
        super()._action_command_list(action)
