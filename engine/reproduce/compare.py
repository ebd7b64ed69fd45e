"""The comparison: the paper's number beside ours for every table cell, plus the claims
checklist (``claims.py``, decided by the written rules below) over the runs that the plan
(``plan.py``: which experiments on which subsets) made.

The comparison reads only the run directories' CSV tables (the public contract), so
it works the same on a run that just finished and on one reopened from disk.

Checklist rules (docs/claims.md#rules), α = 0.05:

1. Non-convergence — on the distance to each model's linearized twin (``lin_distance_rel``;
   ``ntk_distance`` for runs without it), Spearman ρ vs log₂ width over every (width, seed)
   row. Holds: 2L-ReLU's falls (ρ < 0, p < α) and MLP-Attn's does not fall, or stays above
   2L-ReLU's at every width by more than the seed spread (std_A + std_R, sample stds over
   seeds). Does not hold: 2L-ReLU's does not fall, or MLP-Attn's falls without staying
   above. Inconclusive: fewer than 4 widths, or (width, seed) points too few for any
   ordering to reach p < α (exact permutation p; 4 widths × 1 seed: 1/12). Stated twice where ``reproduce`` ran both
   sweeps: the paper's (Adam, 10-class) and full-batch GD on the binary subset (σ_w and lr
   of ``GD_SWEEP``, as in sample_data/configs/ntk_digits_3v8_sigma1_gd.toml).
2. Spectral amplification — r = κ(G³)measured / κ(G)³. Holds: |log₁₀ r| ≤ log₁₀ 2.
   Inconclusive: κ(G) beyond what float64 resolves (``claims.resolvable``: κ(G) ≤ 2.7e10).
   Otherwise does not hold.
3. Influence malleability — flip rates of the default protocol (``flip.ridge``,
   ``flip.ranking``) pooled over seeds (Σ n_flipped / Σ n_selected) with 95% Wilson
   intervals, per attack (10-class task; the binary one when only it ran). Holds:
   MLP-Attn's interval lies above 2L-ReLU's for every attack. Does not hold: 2L-ReLU's
   lies above MLP-Attn's for some attack. Else inconclusive. Beside it: the ratio for
   each cell of the grid {lambda, objective} × {abs_mean, abs_signed_mean} run on the
   binary subsets, so the reader sees which choices carry the verdict.
4. Adversarial training induces malleability — 2L-ReLU PGD flip rate, adversarial vs
   standard training. Holds: the adversarial interval lies above the standard one.
   Does not hold: it lies below. Else inconclusive.
5. Dual implication — kernel-ridge relative test MSE of G³ vs G (ridge 1e-3·tr(K)/n) on the
   noisy eigen-targets (train noise std 0.5; noise-free linear targets are fitted by both).
   Holds: G³ is lower on the aligned (top-eigenvector) targets and higher on the
   misaligned (bottom) ones. Does not hold: the opposite on either. Else inconclusive.
6. Flatter minima — two measures invariant under the ReLU rescaling, mean ± std over
   seeds: the filter-normalised basin width at a loss rise of 0.1 (``width_1d``; holds:
   MLP-Attn's mean − std > 2L-ReLU's mean + std; a censored width cannot be the
   narrower side) and adaptive sharpness (``adaptive_sharpness``; holds: MLP-Attn's
   mean + std < 2L-ReLU's mean − std). Does not hold: the reverse. The verdict the two
   agree on; inconclusive when they disagree (the item names each one's verdict).
   Beside them the top Hessian eigenvalue's verdict (MLP-Attn's mean + std < 2L-ReLU's
   mean − std; with one seed also 10 % lower), which decides runs without either.
7. (v2) Trainable attention (QKV-Attn) — the claim-1 rule with QKV-Attn in MLP-Attn's place
   on the distance to each model's linearized twin (``lin_distance_rel``; QKV-Attn has no
   analytic Θ∞). Holds: 2L-ReLU's falls and QKV-Attn's does not. Does not hold: 2L-ReLU's
   does not fall, or both fall. Inconclusive: fewer than 4 widths. No data: QKV-Attn not
   among the models (``--models relu,attn,qkv``) or no linearized-twin column.

Guards (``engine.results.guards``): claims 1, 3, 4, 6 and 7 are decided on the cells that
pass both guards (``claims.on_trained``), the excluded cells listed beside the verdict;
"inconclusive: models not converged" (or "… at chance") only when too few remain.

Protocols (``plan(protocols=...)``): with the paper's preprocessing and centring both
run, every claim is decided once per protocol (items and table cells carry
``protocol``), so a reader sees which verdicts depend on it.
"""

from __future__ import annotations

from typing import Any

from engine.kinds import ATTACKS
from engine.reproduce.claims import ATTACK_LABELS, MODELS, NO_DATA, NOT_RUN, _pooled, checklist
from engine.reproduce.plan import Part
from engine.results import mean_std, num, ratio
from engine.results.tables import NtkDistanceRow, SpectrumRow

TABLE1_WIDTHS = (16, 1024, 4096)


# -- statistics -------------------------------------------------------------------


_f = num


def _no_data(reason: str) -> dict[str, Any]:
    return {"status": NO_DATA, "reason": reason}


# -- the comparison -------------------------------------------------------------------


def compare(runs: dict[str, dict[str, Any]], parts: list[Part]) -> dict[str, Any]:
    """Paper vs ours for Tables 1–4 and κ, plus the claims checklist.

    ``runs`` maps a part key to ``read_run`` output (``tables``: name → rows) or to
    ``{"missing": reason}`` when the part could not run (e.g. no data set here).
    """
    out: dict[str, Any] = {
        "table1": [],
        "table2": [],
        "table3": [],
        "table4": [],
        "kappa": [],
        "flip_grid": [],
    }
    stats: dict[Any, Any] = {}
    protocols = list(dict.fromkeys(p.protocol for p in parts))
    multi = len(protocols) > 1
    for part in parts:
        run = runs.get(part.key, {"missing": NOT_RUN})
        tables = run.get("tables", {})
        reason = run.get("missing")
        flips = _default_protocol(tables.get("flip_rates"), part)
        before = {k: len(v) for k, v in out.items()}
        grid_cells = _flip_grid(part.dataset, part.task, tables.get("flip_rates"))
        out["flip_grid"] += grid_cells
        key = (part.dataset, part.protocol) if multi else part.dataset
        st = stats.setdefault(key, {})
        st.setdefault("grid", []).extend(grid_cells)
        if part.role == "gd":
            st["ntk_gd"] = None if reason else tables.get("ntk_distance")
            st["reason_gd"] = reason
        elif part.task == "multiclass":
            out["table1"] += _table1(part.dataset, tables.get("ntk_distance"), reason)
            out["table2"] += _flip_table(2, part.dataset, flips, reason)
            out["table4"] += _table4(part.dataset, flips, reason)
            out["kappa"] += _kappa(part.dataset, tables.get("spectrum"), reason)
            st.update(
                ntk=tables.get("ntk_distance"),
                flip=flips,
                spectrum=tables.get("spectrum"),
                alignment=tables.get("alignment"),
                sharpness=tables.get("sharpness"),
                reason=reason,
            )
        else:
            out["table3"] += _flip_table(3, part.dataset, flips, reason)
            st["flip_binary"] = flips
            st["reason_binary"] = reason
        if multi:  # each table cell says which protocol it was measured under
            for k, n in before.items():
                for cell in out[k][n:]:
                    cell["protocol"] = part.protocol
    out["checklist"] = checklist(stats)
    if multi:
        out["protocols"] = protocols
    return out


def _table1(ds: str, rows: list[dict] | None, reason: str | None) -> list[dict[str, Any]]:
    from engine.ntk.paper import paper_ntk_distances

    res = []
    for model in MODELS:
        paper = paper_ntk_distances(model, ds) or {}
        for w in TABLE1_WIDTHS:
            cell: dict[str, Any] = {
                "dataset": ds,
                "model": model,
                "width": w,
                "paper": paper.get(w),
            }
            vals = [
                r.ntk_distance
                for r in map(NtkDistanceRow.from_row, rows or [])
                if r.model == model and r.width == w
            ]
            if reason or rows is None:
                cell.update(_no_data(reason or "the ntk experiment did not run"))
            elif not vals:
                cell.update(_no_data(f"width {w} not in this run's sweep"))
            else:
                m, s, n = mean_std(vals)
                cell.update(mean=m, std=s, seeds=n)
            res.append(cell)
    return res


def _default_protocol(rows: list[dict] | None, part: Part) -> list[dict] | None:
    """The rows of the part's default protocol (``flip.ridge``, ``flip.ranking``)."""
    from engine.experiments.flip_summary import protocol_rows

    if rows is None:
        return None
    return protocol_rows(rows, part.spec.flip.ridge, part.spec.flip.ranking)


def _flip_grid(ds: str, task: str, rows: list[dict] | None) -> list[dict[str, Any]]:
    """The sensitivity grid of one part: per (ridge rule, ranking, attack) the pooled rates
    of both models at ε = 0.3 (or the first ε) and the MLP-Attn / 2L-ReLU ratio."""
    from engine.experiments.flip_summary import grid, ridge_rule

    cells = grid(list(rows or []), "standard")
    eps = (
        0.3
        if any(abs(c["eps"] - 0.3) < 1e-9 for c in cells)
        else (cells[0]["eps"] if cells else 0.3)
    )
    out = []
    for c in cells:
        if abs(c["eps"] - eps) > 1e-9:
            continue
        a, r = c["MLP-Attn"], c["2L-ReLU"]
        out.append(
            {
                "dataset": ds,
                "task": task,
                "ridge": c["ridge"],
                "rule": str(ridge_rule(c["ridge"])),
                "ranking": c["ranking"],
                "attack": ATTACK_LABELS.get(c["attack"], c["attack"]),
                "eps": eps,
                "attn": a["pooled"] if a else None,
                "relu": r["pooled"] if r else None,
                "ratio": c["ratio"],
            }
        )
    return out


def _paper_flip(table: int, ds: str, model: str, attack: str) -> float | None:
    try:
        from engine.malleability.paper import paper_flip_rate
    except ImportError:  # pragma: no cover
        return None
    return paper_flip_rate(table, ds, model, attack)


def _flip_table(
    table: int, ds: str, rows: list[dict] | None, reason: str | None
) -> list[dict[str, Any]]:
    res = []
    for attack in ATTACKS:
        by_model: dict[str, dict[str, Any]] = {}
        for model in MODELS:
            cell: dict[str, Any] = {
                "dataset": ds,
                "model": model,
                "attack": ATTACK_LABELS[attack],
                "paper": _paper_flip(table, ds, model, attack),
            }
            got = _pooled(rows or [], model, attack, "standard", 0.3) or _pooled(
                rows or [], model, attack, "standard"
            )
            if reason or rows is None:
                cell.update(_no_data(reason or "the flip experiment did not run"))
            elif got is None:
                cell.update(_no_data(f"{attack} not in this run"))
            else:
                cell.update(got)
            by_model[model] = cell
            res.append(cell)
        a, r = by_model["MLP-Attn"], by_model["2L-ReLU"]
        rt = ratio(a.get("mean"), r.get("mean"))
        pr = a["paper"] / r["paper"] if a.get("paper") and r.get("paper") else None
        for c in (a, r):
            c["ratio"] = rt
            c["paper_ratio"] = pr
    return res


def _table4(ds: str, rows: list[dict] | None, reason: str | None) -> list[dict[str, Any]]:
    res = []
    for model in MODELS:
        cell: dict[str, Any] = {
            "dataset": ds,
            "model": model,
            "paper_standard": _paper_flip(4, ds, model, "pgd_standard"),
            "paper_adversarial": _paper_flip(4, ds, model, "pgd_adversarial"),
        }
        std = _pooled(rows or [], model, "pgd", "standard")
        adv = _pooled(rows or [], model, "pgd", "adversarial")
        if reason or rows is None:
            cell.update(_no_data(reason or "the flip/advtrain experiments did not run"))
        elif std is None or adv is None:
            cell.update(_no_data("needs PGD flip rates with standard and adversarial training"))
        else:
            cell.update(standard=std, adversarial=adv)
        res.append(cell)
    return res


def _kappa(ds: str, rows: list[dict] | None, reason: str | None) -> list[dict[str, Any]]:
    from engine.spectral.paper import paper_spectrum

    p = paper_spectrum(ds)
    cell: dict[str, Any] = {"dataset": ds, "paper_kappa": p.kappa if p else None}
    typed = [SpectrumRow.from_row(r) for r in rows or []]
    row = next((r for r in typed if r.dataset == ds or r.dataset.startswith(ds)), None)
    if reason or row is None:
        cell.update(_no_data(reason or "the spectrum experiment did not run"))
    else:
        cell.update({k: _f(v) if k != "dataset" else v for k, v in row.to_row().items()})
    return [cell]


# -- checklist ------------------------------------------------------------------------
