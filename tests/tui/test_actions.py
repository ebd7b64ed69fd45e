"""The one action table: every action has its app method, the bindings and the palette
come from it."""

from malleability_tui import actions
from malleability_tui.app import MalleabilityApp


def test_every_action_has_its_method():
    for a in actions.ACTIONS:
        assert callable(getattr(MalleabilityApp, f"action_{a.name}")), a.name


def test_bindings_and_palette_come_from_the_table():
    assert MalleabilityApp.BINDINGS == actions.BINDINGS
    keys = {b.key for b in actions.BINDINGS}
    for a in actions.ACTIONS:
        assert a.key is None or a.key in keys
        assert a.field_key is None or a.field_key in keys
    titles = [c.title for c in actions.system_commands(MalleabilityApp)]
    assert len(titles) == len(set(titles))
    assert titles == [a.palette_title for a in actions.ACTIONS if a.palette_title]
    assert actions.PLAIN_KEY_ACTIONS == {
        "show_tab",
        "run_job",
        "cancel_job",
        "export",
        "screenshot",
        "help",
        "quit",
    }
