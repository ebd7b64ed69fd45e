"""Summaries of ``flip_rates`` rows: pooled counts, the default protocol, the grid.

Pure functions of the rows (the run directory's ``flip_rates.csv`` or the events), shared
by the ``flip``/``advtrain`` experiments, ``reproduce`` and the TUI. A pooled rate is
Σ n_flipped / Σ n_selected over seeds with the Wilson interval of those integers
(never re-derived from the float ``flip_rate``); rows without an integer ``n_flipped``
(written before the column existed) are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine.results import (
    cells_of,
    failed_cells,
    guard_note,
    marked,
    mean_std,
    pooled_rate,
)
from engine.results import ratio as ratio_of
from engine.results.tables import FlipRateRow

if TYPE_CHECKING:
    from engine.run.spec import FlipSpec

MODELS = ("2L-ReLU", "MLP-Attn")
SCORE = {
    "abs_signed_mean": "s_i = mean_t I[t, i], ranked by |s_i|, flip = sign change of s_i",
    "abs_mean": "ranked by mean_t |I[t, i]|, flip = sign change of s_i = mean_t I[t, i]",
    "signed_mean": "ranked by s_i = mean_t I[t, i] (most helpful first), flip = sign change of s_i",
    "per_test": "top set per test point by |I[t, i]|, flips counted per (t, i) pair",
}
KERNEL = "empirical NTK of the trained model, weights frozen; multiclass: shared diagonal block, one-hot targets"


def _f(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


Rows = Iterable[Mapping[str, Any] | FlipRateRow]
"""``flip_rates`` rows: dicts (events, CSV) or typed rows; each function reads them with
``FlipRateRow.from_row``, the one parser."""


def typed(rows: Rows) -> list[FlipRateRow]:
    """The rows as ``FlipRateRow`` (a typed row passes through)."""
    return [r if isinstance(r, FlipRateRow) else FlipRateRow.from_row(r) for r in rows]


def _training(r: FlipRateRow) -> str:
    return r.training or "standard"


def ridge_rule(label: Any) -> str | float:
    """``objective:0.5`` → ``objective``; ``0.01`` → 0.01 (the rule of a ``ridge`` column)."""
    s = str(label)
    if ":" in s:
        return s.split(":", 1)[0]
    x = _f(s)
    return x if math.isfinite(x) else s


def same_rule(label: Any, rule: str | float) -> bool:
    """Whether a row's ``ridge`` label was produced by ``rule`` (objective | lambda | number)."""
    got = ridge_rule(label)
    if isinstance(rule, str) or isinstance(got, str):
        return got == rule
    return math.isclose(got, float(rule), rel_tol=1e-9)


def protocol_rows(
    rows: list[dict[str, Any]], ridge: str | float, ranking: str
) -> list[dict[str, Any]]:
    """The rows of one protocol (ridge rule ``ridge``, ranking ``ranking``): the dicts
    themselves, for the guards, which read any table's rows. Rows without a ``ridge``
    column (runs from before the protocol grid) are of one protocol: all are kept."""
    if not any("ridge" in r for r in rows):
        return list(rows)
    return [
        d for d, r in zip(rows, typed(rows)) if same_rule(r.ridge, ridge) and r.ranking == ranking
    ]


def pooled(rows: Rows) -> dict[str, Any] | None:
    """Pool rows over seeds: rates in percent, the Wilson interval of Σk/Σn, the split.

    None when no row has finite counts (e.g. the curated intervention).
    """
    sel = [
        r
        for r in typed(rows)
        if r.n_flipped is not None and r.n_selected and math.isfinite(r.flip_rate)
    ]
    if not sel:
        return None
    p = pooled_rate((r.n_flipped or 0, r.n_selected or 0) for r in sel)
    m, s, cnt = mean_std(100 * r.flip_rate for r in sel)
    split: dict[str, int | None] = {}
    for key in ("n_helpful", "flipped_helpful", "flipped_harmful"):
        vals: list[int | None] = [getattr(r, key) for r in sel]
        split[key] = (
            sum(v for v in vals if v is not None) if all(v is not None for v in vals) else None
        )
    return {
        "mean": m,
        "std": s,
        "seeds": cnt,
        "pooled": 100 * p.k / p.n,
        "ci_low": 100 * p.lo,
        "ci_high": 100 * p.hi,
        "k": p.k,
        "n": p.n,
        **split,
    }


def split_text(p: dict[str, Any]) -> str:
    """``helpful 60/80 flipped, harmful 2/20`` from a ``pooled`` dict ('' without the split)."""
    nh, fh, fa = p.get("n_helpful"), p.get("flipped_helpful"), p.get("flipped_harmful")
    if nh is None or fh is None or fa is None:
        return ""
    return f"helpful {fh}/{nh} flipped, harmful {fa}/{p['n'] - nh}"


def protocols_in(rows: Rows) -> list[tuple[str, str]]:
    """The distinct (ridge label, ranking) pairs of the rows, in first-seen order."""
    return list(dict.fromkeys((r.ridge, r.ranking) for r in typed(rows)))


def grid(rows: Rows, training: str = "standard") -> list[dict[str, Any]]:
    """Per protocol × attack × ε: both models' pooled rates and the MLP-Attn / 2L-ReLU ratio."""
    rs = [r for r in typed(rows) if _training(r) == training]
    out = []
    for ridge, ranking in protocols_in(rs):
        mine = [r for r in rs if r.ridge == ridge and r.ranking == ranking]
        for attack, eps in dict.fromkeys((r.attack, r.eps) for r in mine):
            cell: dict[str, Any] = {
                "ridge": ridge,
                "ranking": ranking,
                "attack": attack,
                "eps": eps,
            }
            for model in MODELS:
                cell[model] = pooled(
                    r for r in mine if r.model == model and r.attack == attack and r.eps == eps
                )
            a, b = cell["MLP-Attn"], cell["2L-ReLU"]
            q = ratio_of(a["pooled"], b["pooled"]) if a and b else math.nan
            cell["ratio"] = q if math.isfinite(q) else None
            out.append(cell)
    return out


def summarize(
    rows: list[dict[str, Any]],  # dicts: the guards read any table's rows
    dataset: str,
    classes: tuple[int, ...] | None,
    training: str,
    f: FlipSpec,
) -> dict[str, Any]:
    """The default protocol's flip rates (percent) beside the paper's, the MLP-Attn /
    2L-ReLU ratios, and the same ratios for every protocol of the sensitivity grid."""
    from engine.attacks.pgd import resolve_alpha
    from engine.malleability import paper_rate_for_run, paper_table_for

    base = [r for r in typed(rows) if same_rule(r.ridge, f.ridge) and r.ranking == f.ranking]
    failed = failed_cells(rows)
    notes = {
        m: guard_note(failed, m, cells_of(r for r in rows if r["model"] == m))
        for m in dict.fromkeys(str(r["model"]) for r in rows)
    }
    both = "; ".join(f"{m} {n}" for m, n in notes.items() if n)
    table: list[dict[str, Any]] = []
    lines = []
    ratios: dict[str, dict[str, float | None]] = {}
    for attack in f.attacks:
        for eps in f.eps:
            got: dict[str, float] = {}
            for model in dict.fromkeys([*MODELS, *(r.model for r in base)]):
                sel = [r for r in base if r.model == model and r.attack == attack and r.eps == eps]
                if not sel:
                    continue
                p = pooled(sel)
                paper = (
                    paper_rate_for_run(dataset, classes, training, model, attack)
                    if eps == 0.3
                    else None
                )
                nan = float("nan")
                cell = {
                    "model": model,
                    "attack": attack,
                    "eps": eps,
                    "ridge": sel[0].ridge,
                    "ranking": f.ranking,
                    "flip_rate": p["mean"] if p else nan,
                    "std": p["std"] if p else nan,
                    "seeds": p["seeds"] if p else 0,
                    "pooled": p["pooled"] if p else nan,
                    "ci_low": p["ci_low"] if p else nan,
                    "ci_high": p["ci_high"] if p else nan,
                    "n_flipped": p["k"] if p else None,
                    "n_selected": p["n"] if p else None,
                    "n_helpful": p.get("n_helpful") if p else None,
                    "flipped_helpful": p.get("flipped_helpful") if p else None,
                    "flipped_harmful": p.get("flipped_harmful") if p else None,
                    "paper": paper,
                    "spearman": mean_std(r.spearman for r in sel).mean,
                    "topk_overlap": mean_std(r.topk_overlap for r in sel).mean,
                }
                table.append(cell)
                if p is None:
                    continue
                got[model] = p["pooled"]
                pp = f"{paper:.1f}%" if paper is not None else "n/a"
                sp = split_text(p)
                lines.append(
                    marked(
                        f"{training} {model:8s} {attack.upper():4s} ε={eps:g}: {p['pooled']:5.1f}% "
                        f"[{p['ci_low']:.1f}, {p['ci_high']:.1f}] ({p['k']}/{p['n']} over {p['seeds']} seed(s), "
                        f"per-seed {p['mean']:.1f} ± {p['std']:.1f}){'; ' + sp if sp else ''}; paper {pp}",
                        notes.get(model, ""),
                    )
                )
            r, a = got.get("2L-ReLU"), got.get("MLP-Attn")
            pr = (
                paper_rate_for_run(dataset, classes, training, "2L-ReLU", attack)
                if eps == 0.3
                else None
            )
            pa = (
                paper_rate_for_run(dataset, classes, training, "MLP-Attn", attack)
                if eps == 0.3
                else None
            )
            q = ratio_of(a, r)
            ratios.setdefault(attack, {})[f"{eps:g}"] = q if math.isfinite(q) else None
            ratios[attack][f"paper_{eps:g}"] = pa / pr if pa and pr else None
    for attack, v in ratios.items():
        for key, val in v.items():
            if not key.startswith("paper_"):
                pv = v.get(f"paper_{key}")
                ours = f"×{val:.2f}" if val is not None and math.isfinite(val) else "n/a"
                lines.append(
                    marked(
                        f"{training} MLP-Attn / 2L-ReLU {attack.upper()} ε={key}: {ours}"
                        + (f" (paper ×{pv:.1f})" if pv else ""),
                        both,
                    )
                )
    g = grid(rows, training)
    if len(protocols_in(r for r in typed(rows) if _training(r) == training)) > 1:
        for c in g:
            rr = f"×{c['ratio']:.2f}" if c["ratio"] is not None else "n/a"
            rates = " vs ".join(
                f"{c[m]['pooled']:.1f}%" if c[m] else "n/a" for m in ("MLP-Attn", "2L-ReLU")
            )
            lines.append(
                marked(
                    f"{training} grid ridge={c['ridge']} ranking={c['ranking']} {c['attack'].upper()} "
                    f"ε={c['eps']:g}: MLP-Attn vs 2L-ReLU {rates} ({rr})",
                    both,
                )
            )
    return {
        "dataset": dataset,
        "classes": list(classes) if classes else None,
        "training": training,
        "paper_table": paper_table_for(dataset, classes, training),
        "width": f.width,
        "protocol": {
            "ranking": f.ranking,
            "ridge": f.ridge,
            "intervention": f.intervention,
            "top_frac": f.top_frac,
            "score": SCORE[f.ranking],
            "kernel": KERNEL,
            "loss": "squared error of the kernel predictor",
            "pgd_steps": f.pgd_steps,
            "pgd_alpha": {f"{e:g}": resolve_alpha(f.pgd_alpha, e, f.pgd_steps) for e in f.eps},
        },
        **({"adversarial_training": _adv_training(f)} if training == "adversarial" else {}),
        "table": table,
        "ratio_attn_relu": ratios,
        "grid": g,
        "failed_guards": failed,
        "headline": lines,
    }


def _adv_training(f: FlipSpec) -> dict[str, Any]:
    """The adversarial-training recipe of an ``advtrain`` summary, its step resolved."""
    from engine.train.adversarial import resolve_adv_alpha

    steps = f.adv_training_steps()
    return {
        "recipe": f.adv_recipe,
        "eps": f.adv_eps,
        "steps": steps,
        "alpha": resolve_adv_alpha(f.adv_recipe, f.adv_alpha, f.adv_eps, steps),
    }
