"""The summary of ``influence_check`` (docs/protocol.md#influence): per model and truth,
the estimator closest to it, whether the truth resolves one point's effect (its noise
floor), and whether the two truths agree."""

from __future__ import annotations

import math
from typing import Any

from engine.results import mean_std
from engine.results.tables import InfluenceCheckRow

__all__ = ["ESTIMATOR_LABELS", "NOISE", "NOISES", "TRUTHS_AGREE_RHO", "summarize"]

ESTIMATOR_LABELS = {
    "kernel_loo": "kernel LOO",
    "gradient_cg": "gradient (CG)",
    "gradient_exact": "gradient (exact)",
    "retrain_other_order": "retraining, another batch order",
    "pbrf_more_steps": "PBRF, twice the steps",
    "pbrf": "PBRF",
}
NOISE = "retrain_other_order"
NOISES = {"retrain": NOISE, "pbrf": "pbrf_more_steps"}
"""Each truth's noise floor: the same truth measured again another way."""
TRUTH_LABELS = {"pbrf": "the PBRF", "retrain": "retraining"}
TRUTHS_AGREE_RHO = 0.9
"""The PBRF and retraining agree when they rank the removed points at mean ρ ≥ this (ours,
set by hand, not by a measurement; docs/protocol.md#influence). The noise floors do not
use it: a truth is resolved when its floor agrees at p < 0.05 in every seed."""


def summarize(rows: list[dict[str, Any]], dataset: str) -> dict[str, Any]:
    """Per model and truth (pbrf, retrain): every estimator's mean Spearman ρ and sign
    agreement over seeds, the one closest to that truth, and whether the truth resolves
    one point's effect at all; and, with both truths, whether they agree (None: one of
    them is not resolved, so their agreement is not a result).

    Resolved: the truth's noise floor (``NOISES``: retraining with another batch order,
    the PBRF with twice the steps) agrees with it, ρ > 0 at p < 0.05, in every seed
    (``noise_floor``); otherwise the ranking of the estimators is not a result
    ("inconclusive"). Without the noise floor the resolution is "not measured". The PBRF
    rows compare only the points whose solve met ``pbrf_tol`` (the others counted in
    ``n_dropped``, named in ``dropped``, and counted in the headline per seed); a seed
    with fewer than ``pbrf_min_points`` of them (rows' ``truth_converged`` False) is not
    judged (its rows leave the table while another seed is) and the model is never
    "resolved" (None, ``converged`` False); ``seeds`` gives each seed's resolution.
    """
    from engine import results

    failed = results.failed_cells(rows)
    by: dict[str, dict[str, dict[tuple[str, str], list[InfluenceCheckRow]]]] = {}
    for r in map(InfluenceCheckRow.from_row, rows):
        truth = r.truth or "retrain"  # rows written before the column compared with it
        by.setdefault(r.model, {}).setdefault(truth, {}).setdefault(
            (r.estimator, r.ridge), []
        ).append(r)
    models: dict[str, Any] = {}
    headline: list[str] = []
    for model, per_truth in by.items():
        judged = {
            truth: _judge(model, truth, per_truth[truth], failed, headline)
            for truth in sorted(per_truth, key=lambda t: t != "pbrf")
        }
        # the first truth's verdict at the top (what the panels read), each under "truths"
        models[model] = {**next(iter(judged.values())), "truths": judged}
        both = per_truth.get("retrain", {}).get(("pbrf", ""))
        if both:
            rho = mean_std(r.spearman for r in both).mean
            # a truth its own floor does not resolve is noise: disagreeing with it says nothing
            noisy = [TRUTH_LABELS[t] for t in judged if judged[t]["resolved"] is False]
            # an unconverged PBRF is not the PBRF: its agreement says nothing either
            loose = [TRUTH_LABELS[t] for t in judged if judged[t]["converged"] is False]
            agree = None if noisy or loose else rho >= TRUTHS_AGREE_RHO
            models[model]["truths_agree"] = {"spearman": rho, "agree": agree}
            verdict = (
                f"cannot be compared ({' and '.join(noisy)} does not resolve one point's effect)"
                if noisy
                else f"cannot be compared ({' and '.join(loose)} did not converge)"
                if loose
                else "agree"
                if agree
                else "DISAGREE"
            )
            headline.append(
                f"{model}: the two truths {verdict}: the PBRF against retraining, "
                f"Spearman ρ {rho:.2f}"
            )
    return {"headline": headline, "dataset": dataset, "models": models, "failed_guards": failed}


def _judge(
    model: str,
    truth: str,
    ests: dict[tuple[str, str], list[InfluenceCheckRow]],
    failed: Any,
    headline: list[str],
) -> dict[str, Any]:
    from engine import results

    noise_key = NOISES.get(truth, NOISE)
    # a PBRF seed with fewer than pbrf_min_points converged points (``truth_converged``
    # False) is not judged: its statistics leave the table while another seed is judged
    loose = {r.seed for rs in ests.values() for r in rs if r.truth_converged is False}
    known = any(r.truth_converged is not None for rs in ests.values() for r in rs)
    counts = _converged_counts(ests) if truth == "pbrf" else {}
    per_seed = _seed_resolution(ests, noise_key, loose)
    if loose and any(r.seed not in loose for rs in ests.values() for r in rs):
        ests = {k: [r for r in rs if r.seed not in loose] for k, rs in ests.items()}
        ests = {k: rs for k, rs in ests.items() if rs}
    table: list[dict[str, Any]] = []
    for (est, ridge), rs in ests.items():
        rho = mean_std(r.spearman for r in rs)
        sign = mean_std(r.sign_agreement for r in rs)
        signif = sum(1 for r in rs if r.spearman_p < 0.05 and r.spearman > 0)
        table.append(
            {
                "estimator": est,
                "ridge": ridge,
                "spearman": rho.mean,
                "spearman_std": rho.std,
                "significant_seeds": signif,
                "sign_agreement": sign.mean,
                "n_points": sum(r.n_points or 0 for r in rs),
                "seeds": len(rs),
                "seconds": mean_std(r.seconds for r in rs).mean,
            }
        )
    cands = [
        t
        for t in table
        if t["estimator"] not in (noise_key, "pbrf") and math.isfinite(t["spearman"])
    ]
    cands.sort(key=lambda t: (t["spearman"], t["sign_agreement"]), reverse=True)
    noise = next((t for t in table if t["estimator"] == noise_key), None)
    resolved = None if noise is None else noise["significant_seeds"] == noise["seeds"]
    # a seed whose PBRF converged on too few points: its floor (twice the steps) agreeing
    # would measure the solver's drift, not the truth's accuracy, so "resolved" is not
    # claimed for the model either way
    converged = (not loose) if known else None
    if loose:
        resolved = None
    best = cands[0] if cands and resolved is not False else None
    seeds = {str(s) for s in per_seed}
    note = results.guard_note(failed, model, len(seeds))
    label = TRUTH_LABELS.get(truth, truth)
    floor = ESTIMATOR_LABELS[noise_key]
    listing = "; ".join(
        f"{_name(t)} ρ {t['spearman']:.2f}, sign {100 * t['sign_agreement']:.0f} %" for t in cands
    )
    out = {
        "estimators": table,
        "closest": best,
        "noise_floor": noise,
        "resolved": resolved,
        "converged": converged,
        "seeds": {str(k): v for k, v in per_seed.items()},
        "converged_points": {
            str(k): {"kept": a, "of": b, "dropped": d} for k, (a, b, d) in counts.items()
        },
    }
    count = _count_text(counts)
    out["guards"] = note
    if resolved is False:
        assert noise is not None
        headline.append(
            results.marked(
                f"{model}: INCONCLUSIVE against {label}: it does not resolve one point's "
                f"effect ({floor} agrees at ρ {noise['spearman']:.2f}, significant in "
                f"{noise['significant_seeds']} of {noise['seeds']} seeds), so no estimator "
                f"can be judged; estimators: {listing}{count}",
                note,
            )
        )
        return out
    if not cands:
        headline.append(f"{model}: no estimator gives a finite rank correlation with {label}")
        return out
    assert best is not None
    line = (
        f"{model}: closest to {label}: {_name(best)} (Spearman ρ {best['spearman']:.2f}, "
        f"p < 0.05 in {best['significant_seeds']} of {best['seeds']} seeds, sign agreement "
        f"{100 * best['sign_agreement']:.0f} % over {best['n_points']} removed points)"
    )
    if len(cands) > 1:
        line += "; then " + listing.split("; ", 1)[1]
    judged = [str(s) for s, v in per_seed.items() if s not in loose]
    line += (
        f"; {label} DID NOT CONVERGE on enough points in {len(loose)} of {len(seeds)} "
        "seeds (influence_check.pbrf_min_points): not claimed resolved"
        + (f"; judged on seed {', '.join(judged)} only" if judged else "")
        + (f" ({floor} agrees at ρ {noise['spearman']:.2f})" if noise else "")
        if loose
        else "; ground truth not checked for resolution (influence_check.noise_floor = false)"
        if noise is None
        else f"; {label} resolved: {floor} agrees at ρ {noise['spearman']:.2f}"
    )
    headline.append(results.marked(line + count, note))
    drops = [f"seed {k}: {d}" for k, (_, _, d) in counts.items() if d]
    if drops:
        headline.append(
            f"{model}: points left out of every PBRF statistic (their solve missed "
            f"pbrf_tol): {'; '.join(drops)}"
        )
    return out


def _converged_counts(
    ests: dict[tuple[str, str], list[InfluenceCheckRow]],
) -> dict[Any, tuple[int, int, str]]:
    """Per seed of a PBRF truth: (points in its statistics, points removed, the dropped
    ones with their reasons), read from its rows (``n_points``, ``n_dropped``,
    ``dropped``); {} for retraining or rows written before the columns existed."""
    out: dict[Any, tuple[int, int, str]] = {}
    for rs in ests.values():
        for r in rs:
            pbrf = "pbrf" in (r.truth, r.estimator)
            if pbrf and r.n_dropped is not None and r.n_points is not None and r.seed not in out:
                out[r.seed] = (r.n_points, r.n_points + r.n_dropped, r.dropped)
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


def _seed_resolution(
    ests: dict[tuple[str, str], list[InfluenceCheckRow]], noise_key: str, loose: set[Any]
) -> dict[Any, bool | None]:
    """Per seed: resolved (its floor agrees, ρ > 0 at p < 0.05, on enough converged
    points), False (it does not), None (too few converged points, or no floor)."""
    seeds = sorted({r.seed for rs in ests.values() for r in rs}, key=str)
    floor = {r.seed: r for (est, _), rs in ests.items() if est == noise_key for r in rs}
    out: dict[Any, bool | None] = {}
    for seed in seeds:
        r = floor.get(seed)
        out[seed] = (
            None if seed in loose or r is None else bool(r.spearman_p < 0.05 and r.spearman > 0)
        )
    return out


def _count_text(counts: dict[Any, tuple[int, int, str]]) -> str:
    """ "; PBRF truth on 118/120 points converged (seed 0 40/40, …)" ("" without counts)."""
    if not counts:
        return ""
    kept = sum(a for a, _, _ in counts.values())
    total = sum(b for _, b, _ in counts.values())
    each = ", ".join(f"seed {k} {a}/{b}" for k, (a, b, _) in counts.items())
    return f"; PBRF truth on {kept}/{total} points converged ({each})"


def _name(t: dict[str, Any]) -> str:
    label = ESTIMATOR_LABELS.get(t["estimator"], t["estimator"])
    return f"{label} {t['ridge']}" if t["ridge"] else label
