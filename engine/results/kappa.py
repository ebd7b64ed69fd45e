"""What the effects depend on: the rows of ``kappa_sweep`` made into points and fits
(docs/protocol.md#kappa-sweep). Pure: typed rows in, numbers out.

Per (α, model) point: the claim-1 statistic, the slope of ``lin_distance_rel`` against
log width per seed, then its mean and 95% t interval across seeds; the claim-3 flip rate
pooled over seeds with its Wilson interval; the MLP-Attn / 2L-ReLU ratio of the pooled
rates. A cell that failed a guard (not converged, at chance) is left out of its point's
numbers and flags the effect it feeds (``slope_ok``: an ntk cell, ``flip_ok``: a flip
cell), and a flagged effect is left out of the fits (the ratio: either model's flips).
The fits are OLS across the points against log10 κ(G).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from engine.results.guards import MARK
from engine.results.stats import Fit, linear_fit, mean_std, pooled_rate, ratio
from engine.results.tables import KappaFlipRow, KappaNtkRow, KappaSweepRow

NAN = float("nan")
RELU, ATTN = "2L-ReLU", "MLP-Attn"
CUBE_NOTE = (
    "κ(G)³ or κ(G): indistinguishable by construction: log κ(G)³ = 3 log κ(G), so a fit "
    "against κ(G)³ has the same R² and p and a third of the slope; κ_d is the alternative "
    "the data can test"
)


def _failed(r: KappaNtkRow | KappaFlipRow) -> bool:
    return r.converged is False or r.above_chance is False


def seed_slopes(rows: Iterable[KappaNtkRow]) -> list[float]:
    """Per seed, the OLS slope of ``lin_distance_rel`` against ln(width) over that seed's
    cells that passed their guards (two widths at least; else the seed is left out)."""
    by_seed: dict[int | None, list[KappaNtkRow]] = {}
    for r in rows:
        if not _failed(r) and r.width and math.isfinite(r.lin_distance_rel):
            by_seed.setdefault(r.seed, []).append(r)
    out = []
    for cells in by_seed.values():
        xs = [math.log(r.width or 1) for r in cells]
        if len(set(xs)) < 2:
            continue
        mx = sum(xs) / len(xs)
        my = sum(r.lin_distance_rel for r in cells) / len(cells)
        sxx = sum((x - mx) ** 2 for x in xs)
        out.append(sum((x - mx) * (r.lin_distance_rel - my) for x, r in zip(xs, cells)) / sxx)
    return out


def across_seeds(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95% t interval over seeds (NaN bounds with one)."""
    ms = mean_std(values)
    if ms.n < 2:
        return ms.mean, NAN, NAN
    from scipy.stats import t

    half = float(t.ppf(0.975, ms.n - 1)) * ms.std / math.sqrt(ms.n)
    return ms.mean, ms.mean - half, ms.mean + half


def points(
    ntk: Iterable[KappaNtkRow],
    flips: Iterable[KappaFlipRow],
    spectra: Mapping[float, Mapping[str, Any]],
    dataset: str,
) -> list[KappaSweepRow]:
    """One ``KappaSweepRow`` per (α, model) of the rows; ``spectra`` α → the spectrum row
    of that α's first seed (rank, kappa_G, kappa_d, kappa_G_cubed, kappa_G3_direct)."""
    ntk, flips = list(ntk), list(flips)
    models = list(dict.fromkeys([r.model for r in ntk] + [r.model for r in flips]))
    alphas = sorted({r.alpha for r in ntk} | {r.alpha for r in flips})
    out: list[KappaSweepRow] = []
    for a in alphas:
        rates: dict[str, float] = {}
        partial: list[KappaSweepRow] = []
        for m in models:
            nr = [r for r in ntk if r.alpha == a and r.model == m]
            fr = [r for r in flips if r.alpha == a and r.model == m]
            mean, lo, hi = across_seeds(seed_slopes(nr))
            ok_flips = [r for r in fr if not _failed(r)]
            p = pooled_rate((r.n_flipped or 0, r.n_selected or 0) for r in ok_flips)
            rates[m] = p.rate
            bad_nr, bad_fr = sum(map(_failed, nr)), sum(map(_failed, fr))
            sp = spectra.get(a, {})
            partial.append(
                KappaSweepRow(
                    alpha=a,
                    dataset=dataset,
                    model=m,
                    rank=sp.get("rank"),
                    kappa_G=float(sp.get("kappa_G", NAN)),
                    kappa_d=float(sp.get("kappa_d", NAN)),
                    kappa_G_cubed=float(sp.get("kappa_G_cubed", NAN)),
                    kappa_G3_direct=float(sp.get("kappa_G3_direct", NAN)),
                    lin_slope=mean,
                    lin_slope_low=lo,
                    lin_slope_high=hi,
                    flip_rate=p.rate,
                    flip_low=p.lo,
                    flip_high=p.hi,
                    cells=len(nr) + len(fr),
                    failed_cells=bad_nr + bad_fr,
                    slope_ok=bad_nr == 0 and bool(nr),
                    flip_ok=bad_fr == 0 and bool(fr),
                )
            )
        r_ = ratio(rates.get(ATTN), rates.get(RELU))
        out += [_with(row, flip_ratio=r_) for row in partial]
    return out


INTERVALS = {
    "flip_rate": ("flip_low", "flip_high"),
    "lin_slope": ("lin_slope_low", "lin_slope_high"),
}
"""The columns of each effect's 95% interval (the ratio has none)."""


def interval(row: KappaSweepRow, y: str) -> tuple[float, float] | None:
    """(low, high) of the point's 95% interval of column ``y``; None where it has none
    (the ratio, or a slope from one seed)."""
    lo, hi = INTERVALS.get(y, ("", ""))
    if not lo:
        return None
    a, b = float(getattr(row, lo)), float(getattr(row, hi))
    return (a, b) if math.isfinite(a) and math.isfinite(b) else None


def ok(row: KappaSweepRow, y: str) -> bool:
    """Whether the effect ``y`` (a column) of the point passed its guards."""
    return bool(row.slope_ok if y.startswith("lin_slope") else row.flip_ok)


def _with(row: KappaSweepRow, **kw: Any) -> KappaSweepRow:
    return KappaSweepRow.from_row({**row.to_row(), **kw})


def fit(rows: Iterable[KappaSweepRow], y: str, x: str = "kappa_G", model: str = ATTN) -> Fit:
    """OLS of column ``y`` of ``model``'s points on log10 of column ``x``, over the points
    whose effect passed its guards (``flip_ratio``: both models' flips)."""
    rows = list(rows)
    if y == "flip_ratio":
        bad = {r.alpha for r in rows if not r.flip_ok}
        mine = [r for r in rows if r.model == model and r.alpha not in bad]
    else:
        mine = [r for r in rows if r.model == model and ok(r, y)]
    xs = [math.log10(getattr(r, x)) if getattr(r, x) > 0 else NAN for r in mine]
    return linear_fit(xs, [getattr(r, y) for r in mine])


def _fit_dict(f: Fit) -> dict[str, Any]:
    return {"slope": f.slope, "low": f.lo, "high": f.hi, "p": f.p, "r2": f.r2, "points": f.n}


def _fit_text(name: str, f: Fit) -> str:
    if not math.isfinite(f.slope):
        return f"{name}: no fit ({f.n} usable points, three needed)"
    return (
        f"{name}: {f.slope:+.3g} per decade of κ(G) [{f.lo:+.3g}, {f.hi:+.3g}], "
        f"p={f.p:.2g}, R²={f.r2:.2f}, {f.n} points"
    )


def summarize(rows: list[KappaSweepRow], dataset: str) -> dict[str, Any]:
    """The ``kappa_sweep`` section of summary.json: per point κ and the effects, the fits
    against log10 κ(G) (and log10 κ_d where finite) and one line per finding."""
    fits: dict[str, Any] = {}
    lines = []
    for key, y, model in (
        ("flip_ratio", "flip_ratio", ATTN),
        ("lin_slope_attn", "lin_slope", ATTN),
        ("lin_slope_relu", "lin_slope", RELU),
    ):
        if not any(r.model == model for r in rows):
            continue
        f = fit(rows, y, "kappa_G", model)
        # κ(G) against κ_d on the same points: those where κ_d is finite (it is infinite
        # where the numerical rank is below min(n, d), e.g. fully centred with n < d)
        common = [r for r in rows if math.isfinite(r.kappa_d) and r.kappa_d > 0]
        fg, fd = fit(common, y, "kappa_G", model), fit(common, y, "kappa_d", model)
        fits[key] = {
            "kappa_G": _fit_dict(f),
            "kappa_d": _fit_dict(fd),
            "kappa_G_same": _fit_dict(fg),
        }
        lines.append(_fit_text(f"{key} vs log κ(G)", f))
        if math.isfinite(fg.r2) and math.isfinite(fd.r2):
            better = "κ(G)" if fg.r2 > fd.r2 else "κ_d" if fd.r2 > fg.r2 else "neither"
            lines.append(
                f"{key}: R² {fg.r2:.2f} against κ(G), {fd.r2:.2f} against κ_d on the "
                f"{fd.n} points where κ_d is finite: {better}"
            )
    flagged = sorted({r.alpha for r in rows if not (r.slope_ok and r.flip_ok)})
    for r in rows:
        for y, what in (("lin_slope", "claim-1 slope"), ("flip_rate", "flip rate")):
            if not ok(r, y):
                lines.append(
                    f"{MARK} α = {r.alpha:g}, {r.model}: a cell behind its {what} failed a "
                    "guard; left out of the fits"
                )
    return {
        "headline": lines,
        "dataset": dataset,
        "points": [r.to_row() for r in rows],
        "fits": fits,
        "flagged_alphas": flagged,
        "kappa_cubed": CUBE_NOTE,
        "x": "log10 κ(G) over the numerical rank (docs/protocol.md#spectra)",
    }
