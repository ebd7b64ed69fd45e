"""Number, duration and name text: the one implementation the CLI and the TUI print with.

Pure and light (no torch, no numpy, no rich): ``malleability --help`` imports it.
Table cells may be numbers (live events) or strings (CSV read back from disk); every
function here reads both, so a value prints the same whichever way it arrived.
"""

from __future__ import annotations

import math
from typing import Any

from engine.kinds import MODEL_LABELS
from engine.results.rows import num

MISSING = "–"
"""What a missing value prints as."""


def _is_integer_text(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    s = str(v).strip()
    return s.lstrip("+-").isdigit()


def number(v: Any, digits: int = 3) -> str:
    """A table cell as text: integers as they are (``1024``), other numbers with ``digits``
    significant digits (``0.123``, ``12.3``), scientific beyond [1e-3, 1e5) (``1.2e+07``);
    ``–`` for missing (None, empty, NaN); ``∞``; non-numeric text unchanged."""
    if v is None or v == "":
        return MISSING
    if isinstance(v, bool):
        return str(v)
    if _is_integer_text(v):
        return str(int(v))
    x = num(v)
    if math.isnan(x):
        return MISSING if isinstance(v, float) or str(v).lower() == "nan" else str(v)
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return f"{x:.{max(digits - 1, 0)}e}"
    return f"{x:.{digits}g}"


def mean_pm(mean: float, std: float, n: int, digits: int = 3) -> str:
    """``39.9 ± 0.21 (3 seeds)``; one seed has no spread: ``39.9 (1 seed)``."""
    if n <= 1 or not math.isfinite(std):
        return f"{number(mean, digits)} ({n} seed{'s' if n != 1 else ''})"
    return f"{number(mean, digits)} ± {number(std, 2)} ({n} seeds)"


def duration(seconds: float | None) -> str:
    """``1h02m``, ``3m05s`` or ``12s``; ``–`` when unknown. Estimates, elapsed times and
    ETAs all print through it."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return MISSING
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def short_time(stamp: Any) -> str:
    """An ISO start time ``2026-12-03T19:09:50+0000`` as ``12-03 19:09``; other text as is."""
    s = str(stamp or "")
    if len(s) >= 16 and s[4] == "-" and s[10] in "T ":
        return f"{s[5:10]} {s[11:16]}"
    return s or MISSING


def model_name(kind: str) -> str:
    """A model kind (``relu``) as its display name (``2L-ReLU``); a display name or an
    unknown kind unchanged."""
    return MODEL_LABELS.get(kind, kind)


def model_names(kinds: Any) -> str:
    """``('relu', 'attn')`` → ``2L-ReLU, MLP-Attn``."""
    if isinstance(kinds, str):
        kinds = [k for k in kinds.split(",") if k]
    return ", ".join(model_name(str(k)) for k in kinds or ())


def int_list(values: Any) -> str:
    """``[16, 64, 256]`` → ``16,64,256`` (seeds, widths)."""
    if values is None:
        return MISSING
    if isinstance(values, (list, tuple)):
        return ",".join(str(v) for v in values)
    return str(values)


__all__ = [
    "MISSING",
    "duration",
    "int_list",
    "mean_pm",
    "model_name",
    "model_names",
    "number",
    "short_time",
]


ASCII_FALLBACK = {
    "κ": "kappa", "λ": "lambda", "ρ": "rho", "ε": "eps", "Θ": "Theta", "θ": "theta",
    "α": "alpha", "β": "beta", "σ": "sigma", "Σ": "Sum", "δ": "delta", "Δ": "Delta",
    "μ": "mu", "η": "eta", "Φ": "Phi", "ℓ": "l", "→": "->", "⇄": "<->", "×": "x",
    "·": "-", "‖": "||", "±": "+/-", "…": "...", "−": "-", "–": "-", "—": "-",
    "∞": "inf", "≥": ">=", "≤": "<=", "≈": "~", "≫": ">>", "∝": "~", "∈": "in", "÷": "/",
    "√": "sqrt", "⊗": "(x)", "⌈": "ceil(", "⌉": ")", "§": "S", "✓": "+", "✗": "x",
    "⚠": "!", "²": "^2", "³": "^3", "¹": "^1", "⁶": "^6", "⁻": "^-", "ᵀ": "^T",
    "₀": "0", "₁": "1", "₂": "2",
}  # fmt: skip
"""ASCII text for the signs the CLI prints, where a stream cannot encode them. A table is
laid out on this text (``cli.common.StreamConsole``, ``render.table_parts``), so a longer
spelling stays within 80 columns; the checklist's marks (✓ ✗ ? ·) keep one column each,
so its lines stay aligned."""


def encodable(text: str, encoding: str | None) -> str:
    """``text`` as ``encoding`` can write it: the signs of ``ASCII_FALLBACK`` spelled out in
    ASCII, anything else it cannot encode as ``?`` (a ``LC_ALL=C`` or
    ``PYTHONIOENCODING=ascii`` terminal gets plain text, never an encoding error)."""
    import codecs

    try:
        enc = codecs.lookup(encoding or "ascii").name
    except LookupError:
        enc = "ascii"
    try:
        text.encode(enc)
        return text
    except UnicodeEncodeError:
        pass
    out = []
    for ch in text:
        try:
            ch.encode(enc)
            out.append(ch)
        except UnicodeEncodeError:
            out.append(ASCII_FALLBACK.get(ch, "?"))
    return "".join(out)
