"""What the Flips panel shows: flip rates grouped over seeds, with intervals and the paper (pure)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from engine.results import mean_std, ratio
from engine.results.tables import FlipRateRow
from malleability_tui.format import REFERENCE_MODEL
from malleability_tui.text import number as fmt


def task_of(dataset: str, classes: Any = None) -> tuple[str, str]:
    """``mnist:3v8`` or (mnist, classes (3, 8)) → (mnist, 3v8); no classes → 10-class.

    Only a trailing ``:<int>v<int>…`` is a class suffix, so a data source's own colon
    (``folder:/data/pets:0v1``) stays in the name."""
    m = re.fullmatch(r"(.*):(\d+(?:v\d+)+)", str(dataset))
    name, cls = (m.group(1), m.group(2)) if m else (str(dataset), "")
    if not cls and classes:
        cls = "v".join(str(c) for c in classes)
    if cls in ("0v1",) and name == "cifar10":
        cls = "1v0"
    if cls == "8v3":
        cls = "3v8"
    return name, cls or "10-class"


def paper_flip(
    dataset: str, model: str, attack: str, training: str, classes: Any = None
) -> float | None:
    """The paper's flip rate (%) for this cell (``engine.malleability.paper_rate_for_run``)."""
    from engine.malleability.paper import paper_rate_for_run

    name, task = task_of(dataset, classes)
    cls = None if task == "10-class" else tuple(int(c) for c in task.split("v"))
    return paper_rate_for_run(name, cls, training, model, attack.lower())


@dataclass(frozen=True)
class FlipRow:
    dataset: str
    model: str
    attack: str
    eps: float
    training: str
    flip: float
    spearman: float
    n: int
    ratio: float
    paper: float | None
    lo: float = math.nan
    hi: float = math.nan
    """The pooled 95% Wilson interval of the flip rate."""

    def cells(self) -> tuple[str, ...]:
        if math.isfinite(self.flip):
            pct = f"{100 * self.flip:.1f}"
            if math.isfinite(self.lo) and math.isfinite(self.hi):
                pct += f" [{100 * self.lo:.1f}, {100 * self.hi:.1f}]"
        else:
            pct = "–"
        return (
            self.dataset,
            self.model,
            self.attack.upper(),
            fmt(self.eps, 2),
            TRAINING_SHORT.get(self.training, self.training),
            pct,
            fmt(self.spearman, 2),
            fmt(self.ratio, 3) if math.isfinite(self.ratio) else "–",
            f"{self.paper:.1f}%" if self.paper is not None else "–",
            str(self.n),
        )


TRAINING_SHORT = {"standard": "std", "adversarial": "adv"}
"""The training column's words, short enough for the table's ten columns at 80."""

FLIP_HEADERS = (
    "data",
    "model",
    "attack",
    "ε",
    "train",
    "flip % [95% CI]",
    "ρ",
    "÷ReLU",
    "paper",
    "seeds",
)


def flip_columns(rows: list[FlipRow]) -> tuple[list[int], str]:
    """Which of ``FLIP_HEADERS`` the table shows for ``rows`` (indices), and a note of what
    the dropped ones held: at 80 columns the ten columns do not fit (the last, seeds, was
    scrolled off), so the data set when every row has the same one, and the paper's value
    when no row has one, are said once in the note instead."""
    if not rows:
        return list(range(len(FLIP_HEADERS))), ""
    cells = [r.cells() for r in rows]
    keep, note = [], []
    for i, head in enumerate(FLIP_HEADERS):
        values = {c[i] for c in cells}
        if head == "data" and len(values) == 1:
            note.append(f"data set {cells[0][i]}")
        elif head == "paper" and values == {"–"}:
            note.append("no paper value for this data set")
        else:
            keep.append(i)
    return keep, " · ".join(note)


def flip_rows(rows: list[dict[str, Any]], classes: Any = None) -> list[FlipRow]:
    """Group ``flip_rates`` rows over seeds: mean and the 95% Wilson interval [lo, hi] of the
    flips pooled over seeds (integer n_flipped / n_selected), ρ, Attn/ReLU ratio, paper. Pass the
    rows of one protocol (``FlipsPanel`` keeps the default one)."""
    from engine.experiments.flip_summary import pooled, typed

    groups: dict[tuple[str, str, str, float, str], list[FlipRateRow]] = {}
    for r in typed(rows):
        key = (r.dataset or "?", r.model or "?", r.attack or "?", r.eps, r.training or "standard")
        groups.setdefault(key, []).append(r)
    means: dict[tuple[str, str, str, float, str], float] = {}
    stats = {}
    for key, rs in groups.items():
        m, s, n = mean_std(r.flip_rate for r in rs)
        rho, _, _ = mean_std(r.spearman for r in rs)
        means[key] = m
        p = pooled(rs)  # Σ n_flipped / Σ n_selected: integer counts, never floats × sizes
        lo, hi = (p["ci_low"] / 100, p["ci_high"] / 100) if p else (math.nan, math.nan)
        stats[key] = (m, rho, n, lo, hi)
    out = []
    for key in sorted(groups, key=lambda k: (k[0], k[4], k[2], k[3], k[1])):
        ds, model, attack, eps, training = key
        relu = means.get((ds, REFERENCE_MODEL, attack, eps, training), math.nan)
        mine = means[key]
        attn_relu = ratio(mine, relu) if model != REFERENCE_MODEL else math.nan
        m, rho, n, lo, hi = stats[key]
        out.append(
            FlipRow(
                ds,
                model,
                attack,
                eps,
                training,
                m,
                rho,
                n,
                attn_relu,
                paper_flip(ds, model, attack, training, classes),
                lo,
                hi,
            )
        )
    return out
