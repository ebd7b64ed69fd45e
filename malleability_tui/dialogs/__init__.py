"""Dialogs of the Textual app (one widget per file)."""
