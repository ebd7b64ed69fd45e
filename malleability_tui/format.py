"""Pure helpers shared by the panels: model names and colours, ETA, error text.

No Textual here. The form ⇄ spec adapter is ``spec_form.py``; what each panel shows is
in ``views/`` (one module per panel).
"""

from __future__ import annotations

from engine.errors import EngineError
from engine.kinds import MODEL_LABELS

MODEL_NAMES = MODEL_LABELS
"""Model kind → label (the engine's registry, so a new model such as QKV-Attn shows up)."""
REFERENCE_MODEL = "2L-ReLU"
"""The model the others are compared with (flip-rate ratios)."""
MODEL_COLORS = {"2L-ReLU": "cyan", "MLP-Attn": "magenta", "QKV-Attn": "yellow"}
_EXTRA_COLORS = ("green", "blue", "red", "bright_white")


def model_color(label: str, present: list[str] | None = None) -> str:
    """A stable colour per model label; models without a fixed colour take the next free one."""
    if label in MODEL_COLORS:
        return MODEL_COLORS[label]
    others = [m for m in (present or [label]) if m not in MODEL_COLORS]
    i = others.index(label) if label in others else 0
    return _EXTRA_COLORS[i % len(_EXTRA_COLORS)]


def eta(elapsed: float, done: int, total: int) -> float | None:
    """Linear ETA in seconds from the fraction done (None before the first unit)."""
    if done <= 0 or total <= 0 or done > total:
        return None
    return elapsed * (total - done) / done


def error_text(err: BaseException) -> str:
    """One line for a dialog: the engine's message, or the exception's."""
    if isinstance(err, EngineError):
        return str(err)
    return f"{type(err).__name__}: {err}"
