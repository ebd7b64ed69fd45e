"""The ``kappa_sweep`` figure: the effects against κ(G), log x-axis, both models
(docs/protocol.md#kappa-sweep). Points that failed a guard are hollow and unconnected:
shown as not trained, not as a finding."""

from __future__ import annotations

import math
from typing import Any

from engine.results.kappa import INTERVALS, interval
from engine.results.kappa import ok as effect_ok
from engine.results.tables import KappaSweepRow

PANELS = (
    ("flip_rate", "flip rate (pooled, 95 % Wilson)"),
    ("lin_slope", "d lin_distance_rel / d ln m"),
    ("flip_ratio", "flip-rate ratio MLP-Attn / 2L-ReLU"),
)


def draw_kappa(plt: Any, rows: list[dict[str, Any]], title: str) -> Any | None:
    """A figure of three panels against κ(G) (flip rate, claim-1 slope, ratio) from the
    ``kappa_sweep`` rows; None without rows."""
    pts = [KappaSweepRow.from_row(r) for r in rows]
    pts = [p for p in pts if p.kappa_G > 0 and math.isfinite(p.kappa_G)]
    if not pts:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    models = list(dict.fromkeys(p.model for p in pts))
    for ax, (col, ylabel) in zip(axes, PANELS):
        for m in models if col != "flip_ratio" else models[-1:]:
            mine = sorted((p for p in pts if p.model == m), key=lambda p: p.kappa_G)
            for ok in (True, False):  # a failed point's numbers are NaN, but say so
                sel = [
                    p for p in mine if effect_ok(p, col) == ok and math.isfinite(getattr(p, col))
                ]
                if not sel:
                    continue
                x = [p.kappa_G for p in sel]
                y = [getattr(p, col) for p in sel]
                # (below, above) each point; none for the ratio
                ivs = [interval(p, col) for p in sel]
                err = None
                if col in INTERVALS:
                    err = [
                        [0.0 if iv is None else max(0.0, v - iv[0]) for v, iv in zip(y, ivs)],
                        [0.0 if iv is None else max(0.0, iv[1] - v) for v, iv in zip(y, ivs)],
                    ]
                name = "ratio" if col == "flip_ratio" else m
                ax.errorbar(
                    x,
                    y,
                    yerr=err,
                    fmt="o-" if ok else "o",
                    mfc=None if ok else "none",
                    capsize=3,
                    label=name if ok else f"{name} (failed a guard)",
                )
        failed = sorted({p.kappa_G for p in pts if not effect_ok(p, col)})
        for i, k in enumerate(failed):  # no number there: the point's models did not train
            ax.axvline(k, ls=":", color="grey", label="a model failed a guard" if i == 0 else None)
        ax.set_xscale("log")
        from matplotlib.ticker import NullFormatter

        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set(xlabel="κ(G)", ylabel=ylabel)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    return fig
