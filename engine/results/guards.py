"""Precondition guards: may a trained cell's numbers be read as a result?

Two guards, each written once and used by every experiment, summary, the ``reproduce``
checklist and the TUI:

* ``convergence`` / ``converged``: did training settle? The rule (docs/claims.md#guards), on
  the epoch-mean training loss L_1 … L_E (the data loss without the L2 term):
  with a window of w = max(2, ⌈0.1·E⌉) epochs, last = mean of the last w epochs,
  prev = mean of the w before them, and noise = 2·SE(prev − last) from the two windows'
  sample variances, a cell has **converged** when

  1. the loss left its start: with ref = min(L_1, the loss of the best constant predictor
     when known, ``constant_loss``), ref − last > max(``MIN_DROP``·ref, noise) (a model
     still on its initial plateau has not converged, however flat its curve; nor has one
     that hovers at the constant predictor's loss after a first epoch above it), and
  2. it has settled: prev − last ≤ ``TOL``·(L_1 − last), i.e. the last 10 % of epochs made
     at most 1 % of the total decrease. For an exponential approach to a limit this needs
     about four time constants (the loss within ≈ 2 % of its limit). Batch noise is not
     allowed for here on purpose: a slow crawl hidden in noise (MLP-Attn with small
     batches) would pass as settled;

  or when last ≤ ``FLOOR`` (nothing left to fit). Fewer than 4 epochs cannot tell: not
  converged.
* ``above_chance`` (``engine.results.stats``): one-sided binomial test of the test
  accuracy against the majority-class rate (``majority_rate``).

Table rows carry both as booleans (columns ``converged``, ``above_chance``); ``flag``
reads them back from live rows (bool) and from CSV (text), and ``failed_cells`` /
``guard_note`` turn a table's rows into the marks every summary line carries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from engine.results.stats import mean_std
from engine.results.tables import parse_cell

WINDOW = 0.1
"""Fraction of the epochs in the window whose progress is judged (the last 10 %)."""
TOL = 0.01
"""Largest share of the total loss decrease the last window may still make."""
MIN_DROP = 0.01
"""Smallest decrease from the first epoch's loss, relative to it, that counts as leaving the start."""
FLOOR = 1e-4
"""A training loss at or below this has nothing left to fit: converged."""
GUARDS = (("converged", "not converged"), ("above_chance", "at chance"))
"""The guard columns of the tables and what a failure of each is called."""
STUCK_NOTE = "stuck at start"
"""What a cell stopped as stuck at its initial loss is called in a guard note."""
MARK = "⚠"
"""What starts the guard mark of a summary line (``marked``)."""


class Convergence(NamedTuple):
    """The verdict of ``convergence`` and the numbers behind it."""

    converged: bool
    reason: str
    """``settled``, ``below floor``, ``still falling``, ``never left its initial loss`` or
    ``too few epochs``."""
    share: float
    """(prev − last) / (L_1 − last): the share of the total decrease made by the last window."""


def _mean_var(v: list[float]) -> tuple[float, float]:
    """Mean and sample variance (n − 1; 0 for one value) of a window of epoch losses."""
    m = mean_std(v)
    return m.mean, m.std**2


def windows(losses: Sequence[float], window: float = WINDOW) -> tuple[float, float, float] | None:
    """prev, last and noise of the module docstring on the epoch-mean losses [E] with
    windows of w = max(2, ⌈``window``·E⌉) epochs; None when E < 2w (too few epochs)."""
    e = len(losses)
    w = max(2, math.ceil(window * e))
    if e < 2 * w:
        return None
    prev, vp = _mean_var(list(losses[e - 2 * w : e - w]))
    last, vl = _mean_var(list(losses[e - w :]))
    return prev, last, 2.0 * math.sqrt(vp / w + vl / w)


def convergence(
    losses: Iterable[float],
    *,
    baseline: float | None = None,
    window: float = WINDOW,
    tol: float = TOL,
    min_drop: float = MIN_DROP,
    floor: float = FLOOR,
) -> Convergence:
    """The convergence rule of the module docstring on the epoch-mean losses [E];
    ``baseline``: the training loss of the best constant predictor (``constant_loss``)."""
    loss = [float(x) for x in losses]
    nan = float("nan")
    if not all(math.isfinite(x) for x in loss):
        return Convergence(False, "non-finite loss", nan)
    got = windows(loss, window)
    if got is None:
        return Convergence(False, "too few epochs", nan)
    prev, last, noise = got
    total = loss[0] - last
    share = (prev - last) / total if total > 0 else nan
    if last <= floor:
        return Convergence(True, "below floor", share)
    ref = loss[0] if baseline is None or not math.isfinite(baseline) else min(loss[0], baseline)
    if ref - last <= max(min_drop * abs(ref), noise):
        return Convergence(False, "never left its initial loss", share)
    if prev - last <= tol * total:
        return Convergence(True, "settled", share)
    return Convergence(False, "still falling", share)


def converged(losses: Iterable[float], **kw: Any) -> bool:
    """``convergence(losses, **kw).converged``."""
    return convergence(losses, **kw).converged


def constant_loss(labels: Iterable[Any]) -> float:
    """The training loss of the best constant predictor: for ±1 targets (floats) the MSE
    of their mean, 1 − mean(y)²; for class indices (ints) the cross-entropy of the class
    frequencies, their entropy (ln K when balanced). NaN for no labels."""
    from collections import Counter

    vals = labels.tolist() if hasattr(labels, "tolist") else list(labels)
    if not vals:
        return float("nan")
    if all(isinstance(v, float) for v in vals):
        m = math.fsum(vals) / len(vals)
        return math.fsum((v - m) ** 2 for v in vals) / len(vals)
    n = len(vals)
    return -math.fsum(c / n * math.log(c / n) for c in Counter(vals).values())


def majority_rate(labels: Iterable[Any]) -> float:
    """The accuracy of always predicting the most common label (±1 targets or class
    indices; a tensor's ``tolist()`` or any iterable); NaN for no labels."""
    from collections import Counter

    vals = labels.tolist() if hasattr(labels, "tolist") else list(labels)
    if not vals:
        return float("nan")
    return max(Counter(vals).values()) / len(vals)


def flag(v: Any) -> bool | None:
    """A guard cell as a bool: True/False live, ``True``/``False``/``1``/``0`` from CSV
    (``engine.results.tables.parse_cell``, the one cell parser); None when missing (rows
    written before the columns existed) or unreadable."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return bool(v) if math.isfinite(v) else None
    try:
        return parse_cell(bool, v)
    except ValueError:
        return None


def _cell_name(r: Mapping[str, Any]) -> str:
    parts = []
    if r.get("width") not in (None, ""):
        parts.append(f"m={_int(r['width'])}")
    if r.get("seed") not in (None, ""):
        parts.append(f"seed={_int(r['seed'])}")
    return " ".join(parts) or "?"


def _int(v: Any) -> Any:
    try:
        f = float(v)
        return int(f) if f.is_integer() else v
    except (TypeError, ValueError):
        return v


def failed_cells(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, list[str]]]:
    """Which trained cells fail which guard: ``{"not converged": {model: ["m=16 seed=0",
    …]}, "at chance": {…}}`` (only guards that some cell fails; each cell once per model,
    in first-seen order). Rows without the guard columns count as unknown, not failed. A
    cell stopped as stuck at its initial loss (column ``stuck``, ``engine.train.until``)
    is named so among the unconverged: ``m=1024 seed=0 stuck at start``."""
    out: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        for col, what in GUARDS:
            if flag(r.get(col)) is False:
                cells = out.setdefault(what, {}).setdefault(str(r.get("model", "?")), [])
                name = _cell_name(r)
                if col == "converged" and flag(r.get("stuck")):
                    name += f" {STUCK_NOTE}"
                if name not in cells:
                    cells.append(name)
    return out


def cells_of(rows: Iterable[Mapping[str, Any]], model: str | None = None) -> int:
    """Distinct (width, seed) cells among ``rows`` (of ``model`` when given)."""
    return len({_cell_name(r) for r in rows if model is None or str(r.get("model")) == model})


def guard_note(
    failed: Mapping[str, Mapping[str, list[str]]],
    model: str,
    total: int | None = None,
    limit: int = 4,
) -> str:
    """``not converged in 2 of 4 cells (m=16 seed=0, m=64 seed=0); at chance in …`` for
    ``model`` ('' when it passes every guard): the mark a summary line carries."""
    parts = []
    for _, what in GUARDS:
        cells = list(failed.get(what, {}).get(model, []))
        if not cells:
            continue
        of = f" of {total}" if total else ""
        shown = ", ".join(cells[:limit]) + (", …" if len(cells) > limit else "")
        parts.append(
            f"{what} in {len(cells)}{of} cell{'s' if (total or len(cells)) != 1 else ''} ({shown})"
        )
    return "; ".join(parts)


def marked(line: str, note: str) -> str:
    """``line`` with the guard ``note`` appended as a warning: the numbers of such cells
    are not results (the same mark in every summary)."""
    return f"{line} {MARK} {note}: their numbers are not results" if note else line


def guard_verdict(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """``models not converged`` / ``models at chance`` (both joined by ``and``) when any of
    ``rows`` fails a guard, else None: why a checklist claim is inconclusive."""
    failed = failed_cells(rows)
    names = [what for _, what in GUARDS if failed.get(what)]
    if not names:
        return None
    return "models " + " and ".join(names)
