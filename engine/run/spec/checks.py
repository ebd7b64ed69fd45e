"""Limits and value checks shared by the run spec's sections (one implementation: every
section and ``kappa`` use these)."""

from __future__ import annotations

import math
from typing import Any

from engine.errors import ConfigError

DEFAULT_WIDTHS = tuple(2**k for k in range(2, 13))  # 4 … 4096 (paper)


def _check(cond: bool, fld: str, value: Any, allowed: str) -> None:
    if not cond:
        raise ConfigError(fld, value, allowed)


MAX_WIDTH = 2**20
"""Largest hidden width (and QKV d_k) a spec may ask for: beyond it one layer alone
outgrows any machine this tool runs on; every width field is checked against it."""
MAX_EPOCHS = 10**6
"""The most epochs a cell may train (``train.epochs``, ``train.max_epochs``)."""
MAX_SEED = 2**31 - 1
"""Largest seed: seeds are offset and combined (``batch_seed``) and must stay int64."""
MAX_NOTE_CHARS = 500
"""Longest ``note``: one line printed before a run starts, not a document."""
MAX_CONFIG_BYTES = 1 << 20
"""Largest spec file ``RunSpec.load`` reads (a real one is a few KB)."""
MAX_STEP = 1e3
"""Largest attack step size, span or init scale: inputs live in [0, 1], so anything
larger only overflows."""


def _width(v: Any) -> bool:
    return _pos_int(v) and v <= MAX_WIDTH


def _pos_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _pos_float(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _nonneg_float(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
