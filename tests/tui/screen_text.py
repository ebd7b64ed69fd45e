"""Plain-text dump of the current screen (debugging and text assertions in Pilot tests)."""

from __future__ import annotations


def screen_text(app) -> str:
    """The visible screen as lines of text (styles dropped)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip).rstrip() for strip in strips)
