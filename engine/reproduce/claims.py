"""The claims checklist: one verdict per claim of docs/claims.md and data set, from the rows
of the reproduction's runs (holds / does not hold / inconclusive: why / no data).

Verdicts from trained models (docs/claims.md#rules): a claim that rests on trained
cells is decided on the cells that pass both guards (``engine.results.guards``: converged
and above chance). A group of cells the rule compares (claim 1: a model at a width;
claim 3: a model under an attack; claim 4: a training recipe; claim 6: a model) is kept
when at least ``min(MIN_SEEDS, its seeds)`` of its seeds pass; claims 1 and 7 drop a
width for both models when either model's group there is dropped, so the comparison
stays like for like. The excluded cells are listed beside the verdict; only when too
few groups remain for the rule (claim 1: 4 widths; claim 3: one attack; claims 4 and 6:
every group) is the verdict "inconclusive: models not converged" (or "at chance").

Claim 2 is decided only where float64 resolves κ(G³) (``resolvable``).
"""

from __future__ import annotations

import math
from typing import Any

from engine.results import best_p, guard_verdict, mean_std, ratio, spearman
from engine.results.guards import GUARDS, flag
from engine.results.tables import AlignmentRow, NtkDistanceRow, SharpnessRow, SpectrumRow

ALPHA = 0.05


MODELS = ("2L-ReLU", "MLP-Attn")


HOLDS, FAILS, INCONCLUSIVE, NO_DATA = "holds", "does not hold", "inconclusive", "no data"
NOT_RUN = "not run yet"
"""The reason of a part that has not run (yet): the verdicts it feeds read "no data: not
run yet" while a reproduction runs."""

MIN_SEEDS = 2
"""Seeds of a group that must pass the guards for the group to count (all of them when
fewer ran)."""
EPS64 = 2.220446049250313e-16
RESOLVE = 1.0
"""Claim 2 is decided when EPS64 · κ(G)^{3/2} ≤ RESOLVE (``resolvable``)."""


def resolvable(kappa_g: float) -> bool:
    """Can float64 resolve κ(G³) as ``engine.spectral.spectrum`` computes it, σ(GX)²?

    GX is formed and its SVD taken in float64: both are backward stable, so every singular
    value carries an absolute error of order EPS64 · σ_1(GX), and σ_r(GX) = σ_1(GX) ·
    κ(G)^{-3/2} keeps a relative error of order EPS64 · κ(G)^{3/2}. Measured on the
    synthetic sweep (``engine.spectral.synthetic``, 64×32) the error is ≈ 0.05 · EPS64 ·
    κ(G)^{3/2} (1e-8 at κ(G) = 1e6, 1e-2 at 1e10, O(1) at 1e11). Requiring EPS64 · κ(G)^{3/2}
    ≤ 1 keeps the measured κ(G³) within a few percent, far inside the factor 2 the rule
    allows: κ(G) ≤ EPS64^{-2/3} ≈ 2.7e10, i.e. κ(G)³ ≤ 2.0e31.
    """
    return math.isfinite(kappa_g) and EPS64 * kappa_g**1.5 <= RESOLVE


def _passes(r: dict) -> bool:
    return all(flag(r.get(col)) is not False for col, _ in GUARDS)


def _failure(r: dict) -> str:
    """Which guard a cell failed, with its measured train loss where the row has one
    ("not converged at train loss 0.617"): where a protocol cannot train a model, the
    verdict shows how far training got."""
    why = " and ".join(what for col, what in GUARDS if flag(r.get(col)) is False)
    try:
        loss = float(r.get("train_loss", ""))
    except (TypeError, ValueError):
        return why
    return f"{why} at train loss {loss:.3g}" if math.isfinite(loss) else why


def _cell(r: dict) -> str:
    parts = [str(r.get("model", "?"))]
    if r.get("attack") not in (None, ""):
        parts.append(str(r["attack"]))
    if r.get("training") not in (None, "", "standard"):
        parts.append(str(r["training"]))
    if r.get("width") not in (None, ""):
        parts.append(f"m={_num(r['width'])}")
    if r.get("seed") not in (None, ""):
        parts.append(f"seed={_num(r['seed'])}")
    return " ".join(parts)


def _num(v: Any) -> Any:
    try:
        f = float(v)
        return int(f) if f.is_integer() else v
    except (TypeError, ValueError):
        return v


def on_trained(rows: list[dict], group: Any) -> tuple[list[dict], list[str], set[Any], set[Any]]:
    """The module docstring's rule: (rows of passing cells in kept groups, the excluded
    cells as ``"MLP-Attn m=16 seed=0: not converged"``, kept group keys, dropped keys);
    ``group(row)`` is the key of the group a row belongs to."""
    seeds: dict[Any, set[str]] = {}
    failed: dict[Any, set[str]] = {}
    for r in rows:
        k, s = group(r), str(r.get("seed", ""))
        seeds.setdefault(k, set()).add(s)
        if not _passes(r):
            failed.setdefault(k, set()).add(s)
    dropped = {
        k for k, ss in seeds.items() if len(ss - failed.get(k, set())) < min(MIN_SEEDS, len(ss))
    }
    kept = [r for r in rows if group(r) not in dropped and _passes(r)]
    excluded = list(dict.fromkeys(f"{_cell(r)}: {_failure(r)}" for r in rows if not _passes(r)))
    return kept, excluded, set(seeds) - dropped, dropped


def _excluded_text(excluded: list[str], total: int, limit: int = 3) -> str:
    if not excluded:
        return ""
    shown = ", ".join(excluded[:limit]) + (", …" if len(excluded) > limit else "")
    return f"; decided on {total - len(excluded)} of {total} cells (excluded: {shown})"


def _cells(rows: list[dict]) -> int:
    return len({_cell(r) for r in rows})


def _pooled(
    rows: list[dict], model: str, attack: str, training: str, eps: float | None = None
) -> dict[str, Any] | None:
    """Pooled flip rate (percent) from the integer counts (``flip_summary.pooled``)."""
    from engine.experiments.flip_summary import pooled, typed

    sel = [
        r
        for r in typed(rows)
        if r.model == model
        and r.attack == attack
        and r.training == training
        and (eps is None or abs(r.eps - eps) < 1e-9)
    ]
    return pooled(sel)


def _claim(n: int, claim: str, statistic: str, verdict: str, **values: Any) -> dict[str, Any]:
    """One checklist item; a guarded verdict (``_guarded``) keeps the rule's own verdict
    as ``rule_verdict`` and says it at the end of the statistic."""
    rule = values.pop("rule_verdict", None)
    if rule is not None and rule != verdict:
        statistic += f" (on every cell, untrained ones included: {rule})"
        values["rule_verdict"] = rule
    values.setdefault("excluded", [])
    return {"claim": n, "title": claim, "statistic": statistic, "verdict": verdict, **values}


def checklist(stats: dict[Any, dict[str, Any]]) -> list[dict[str, Any]]:
    """Six claims and v2's (7) × data sets → holds / does not hold / inconclusive / no data.

    ``stats`` is keyed by data set, or by (data set, protocol) when the reproduction ran
    more than one protocol: each item then carries its ``protocol``."""
    items: list[dict[str, Any]] = []
    for key, s in stats.items():
        ds, proto = key if isinstance(key, tuple) else (key, None)
        mine = _items(ds, s)
        if proto is not None:
            for item in mine:
                item["protocol"] = proto
        items += mine
    return items


def _items(ds: str, s: dict[str, Any]) -> list[dict[str, Any]]:
    """The checklist's items for one data set's statistics ``s``. An item without data
    whose part did not run says why, as inconclusive ones do: ``no data: REASON``
    (``reason``, ``reason_gd``, ``reason_binary``: the reason of the multiclass, the GD,
    the binary part)."""
    items = _decided(ds, s)
    for item in items:
        if item["verdict"] != NO_DATA:
            continue
        if item.get("sweep", "").startswith("full-batch GD"):
            why = s.get("reason_gd")
        else:
            why = s.get("reason") or (s.get("reason_binary") if item["claim"] == 3 else None)
        if why:
            item["verdict"] = f"{NO_DATA}: {why}"
    return items


def _decided(ds: str, s: dict[str, Any]) -> list[dict[str, Any]]:
    items = [_claim1(ds, s.get("ntk"), "Adam, 10-class" if "ntk_gd" in s else "")]
    if "ntk_gd" in s:
        items.append(_claim1(ds, s.get("ntk_gd"), "full-batch GD, binary"))
    items.append(_claim2(ds, s.get("spectrum")))
    items.append(_claim3(ds, s.get("flip"), s.get("flip_binary"), s.get("grid", [])))
    items.append(_claim4(ds, s.get("flip")))
    items.append(_claim5(ds, s.get("alignment")))
    items.append(_claim6(ds, s.get("sharpness")))
    items.append(_claim_v2(ds, s.get("ntk")))
    return items


def _claim1(ds: str, rows: list[dict] | None, sweep: str = "") -> dict[str, Any]:
    t = "non-convergence: 2L-ReLU approaches its NTK predictor with width, MLP-Attn does not"
    if sweep:
        t += f" ({sweep})"
    extra = {"sweep": sweep} if sweep else {}
    col = "lin_distance_rel"
    if not rows:
        return _claim(1, t, f"Spearman ρ({col}, log₂ m)", NO_DATA, dataset=ds, **extra)
    if not any(math.isfinite(NtkDistanceRow.from_row(r).lin_distance_rel) for r in rows):
        col = "ntk_distance"  # a run without the linearized twin: the paper's column
    v, stat, x = _width_rule(rows, col, *MODELS)
    rr, pr, ra, pa = x["rho_ref"], x["p_ref"], x["rho_other"], x["p_other"]
    return _claim(
        1,
        t,
        f"{col}: {stat}",
        v,
        dataset=ds,
        rho_relu=rr,
        p_relu=pr,
        rho_attn=ra,
        p_attn=pa,
        rule_verdict=x["rule_verdict"],
        excluded=x.get("excluded", []),
        **extra,
    )


def _guarded(verdict: str, rows: list[dict]) -> str:
    """``verdict``, or "inconclusive: models not converged" (… at chance) when a cell behind
    ``rows`` fails a guard (``engine.results.guard_verdict``)."""
    why = guard_verdict(rows)
    return f"{INCONCLUSIVE}: {why}" if why and verdict != NO_DATA else verdict


def _width_rule(
    rows: list[dict], column: str, ref: str, other: str
) -> tuple[str, str, dict[str, Any]]:
    """Claim 1's rule (``_rule``) decided on the trained cells (module docstring): a width
    where either model has too few passing seeds is dropped for both; "inconclusive:
    models not converged" only when fewer than 4 widths remain."""
    used = [r for r in rows if r["model"] in (ref, other)]
    v_all, stat, vals = _rule(used, column, ref, other)
    kept, excluded, _, dropped = on_trained(used, lambda r: (r["model"], _num(r.get("width"))))
    if not excluded:
        return v_all, stat, {**vals, "rule_verdict": v_all}
    gone = {w for _, w in dropped}
    kept = [r for r in kept if _num(r.get("width")) not in gone]
    v, stat, vals = _rule(kept, column, ref, other)
    if v == INCONCLUSIVE and dropped:
        v = _guarded(v, used)
    stat += _excluded_text(excluded, _cells(used))
    return v, stat, {**vals, "rule_verdict": v_all, "excluded": excluded}


def _rule(rows: list[dict], column: str, ref: str, other: str) -> tuple[str, str, dict[str, Any]]:
    """Claim 1's rule on ``column`` (module docstring of ``compare``): ``ref`` falls with
    log₂ m (ρ < 0, p < α) and ``other`` does not fall or stays above ``ref`` by more than
    the seed spread at every width → holds; fewer than 4 widths or NaN ρ → inconclusive;
    else does not hold."""
    res, per_width, xs_of = {}, {}, {}
    typed = [NtkDistanceRow.from_row(r) for r in rows]
    for model in (ref, other):
        sel = [
            (float(r.width), float(getattr(r, column)))
            for r in typed
            if r.model == model and r.width is not None and math.isfinite(getattr(r, column))
        ]
        xs = xs_of[model] = [math.log2(w) for w, _ in sel]
        res[model] = spearman(xs, [v for _, v in sel]) + (len(set(xs)),)
        per_width[model] = {
            w: mean_std(v for wv, v in sel if wv == w) for w in {wv for wv, _ in sel}
        }
    (rr, pr, nw), (ro, po, no) = res[ref], res[other]
    common = sorted(set(per_width[ref]) & set(per_width[other]))
    n_above = sum(
        per_width[other][w].mean - per_width[ref][w].mean
        > per_width[other][w].std + per_width[ref][w].std
        for w in common
    )
    above = bool(common) and n_above == len(common)
    stat = (
        f"ρ {ref} {rr:+.2f} (p={pr:.2g}), {other} {ro:+.2f} (p={po:.2g}) over {min(nw, no)} widths"
    )
    if common:
        stat += (
            f"; {other} above {ref} by more than the seed spread at {n_above} of "
            f"{len(common)} widths"
        )
    other_falls = ro < 0 and po < ALPHA
    floor = best_p(xs_of[ref])  # the smallest p these widths × seeds can give
    if min(nw, no) < 4 or not (math.isfinite(rr) and math.isfinite(ro)):
        v = INCONCLUSIVE
    elif not floor < ALPHA:
        v = INCONCLUSIVE
        stat += (
            f"; {len(xs_of[ref])} (width, seed) points cannot reach p < {ALPHA:g} "
            f"(best p {floor:.2g}): add widths or seeds"
        )
    elif rr < 0 and pr < ALPHA and (not other_falls or above):
        v = HOLDS
    else:
        v = FAILS
    vals: dict[str, Any] = {
        "rho_ref": rr,
        "p_ref": pr,
        "rho_other": ro,
        "p_other": po,
        "other_above": above,
    }
    return v, stat, vals


def _claim_v2(ds: str, rows: list[dict] | None) -> dict[str, Any]:
    t = "v2: trainable Q/K/V attention does not approach its linearization with width; 2L-ReLU does"
    name = "Spearman ρ(lin_distance_rel, log₂ m)"
    col = "lin_distance_rel"
    if not rows or not any(r["model"] == "QKV-Attn" for r in rows):
        return _claim(7, t, name + " (QKV-Attn not among the models)", NO_DATA, dataset=ds)
    if not any(math.isfinite(NtkDistanceRow.from_row(r).lin_distance_rel) for r in rows):
        return _claim(7, t, name + " (linearized twin not available)", NO_DATA, dataset=ds)
    v, stat, vals = _width_rule(rows, col, "2L-ReLU", "QKV-Attn")
    return _claim(7, t, stat, v, dataset=ds, **vals)


def _claim2(ds: str, rows: list[dict] | None) -> dict[str, Any]:
    t = "spectral amplification: κ(G³) = κ(G)³"
    row = next((SpectrumRow.from_row(r) for r in rows or []), None)
    if row is None:
        return _claim(2, t, "κ(G³) / κ(G)³", NO_DATA, dataset=ds)
    k3, kc = row.kappa_G3_direct, row.kappa_G_cubed
    r = ratio(k3, kc)
    stat = f"κ(G) {row.kappa_G:.4g}, κ(G)³ {kc:.4g}, κ(G³) measured {k3:.4g}, ratio {r:.4g}"
    if not resolvable(row.kappa_G):
        stat += f" (float64 resolves κ(G³) only for κ(G) ≤ {EPS64 ** (-2 / 3):.2g})"
        return _claim(2, t, stat, f"{INCONCLUSIVE}: κ(G) beyond float64", dataset=ds, ratio=r)
    if not math.isfinite(r):
        v = INCONCLUSIVE
    elif abs(math.log10(r)) <= math.log10(2):
        v = HOLDS
    else:
        v = FAILS
    return _claim(2, t, stat, v, dataset=ds, ratio=r)


def _claim3(
    ds: str,
    rows: list[dict] | None,
    binary: list[dict] | None = None,
    grid: list[dict] | None = None,
) -> dict[str, Any]:
    """Claim 3 on the default protocol (10-class rows; the binary ones when no 10-class
    flips ran), decided on the trained cells (module docstring), with the sensitivity
    grid's MLP-Attn / 2L-ReLU ratios beside it."""
    t = "influence malleability: MLP-Attn's influence flips more often than 2L-ReLU's"
    side = _grid_text(grid or [])
    task = "10-class"
    if not rows:
        rows, task = binary, "binary"
    name = "flip-rate ratio MLP-Attn / 2L-ReLU with 95% Wilson CIs"
    if not rows:
        return _claim(3, t, name, NO_DATA, dataset=ds, grid=grid or [])
    used = [r for r in rows if r["training"] == "standard" and r["model"] in MODELS]
    v_all, parts = _flip_rule(used)
    if not parts:
        return _claim(3, t, "flip-rate ratio", NO_DATA, dataset=ds, grid=grid or [])
    kept, excluded, _, dropped = on_trained(used, lambda r: (r["model"], r["attack"]))
    v = v_all
    if excluded:
        gone = {a for _, a in dropped}
        v, parts = _flip_rule([r for r in kept if r["attack"] not in gone])
        if not parts:
            v, parts = _guarded(INCONCLUSIVE, used), ["no attack with enough trained cells"]
    r0 = used[0] if used else rows[0]
    stat = f"{task}, ridge {r0.get('ridge')}, ranking {r0.get('ranking')}: " + "; ".join(parts)
    stat += _excluded_text(excluded, _cells(used))
    if side:
        stat += f" | grid (MLP-Attn/2L-ReLU): {side}"
    return _claim(3, t, stat, v, dataset=ds, grid=grid or [], rule_verdict=v_all, excluded=excluded)


def _flip_rule(rows: list[dict]) -> tuple[str, list[str]]:
    """Holds when MLP-Attn's pooled flip rate's CI lies above 2L-ReLU's under every
    attack, does not hold when 2L-ReLU's lies above under some attack, else inconclusive;
    and the per-attack text. No attack with both models: (inconclusive, [])."""
    from engine.experiments.flip_summary import typed

    parts, above, below = [], 0, 0
    for a in sorted({r.attack for r in typed(rows)}):
        pa = _pooled(rows, "MLP-Attn", a, "standard")
        pr = _pooled(rows, "2L-ReLU", a, "standard")
        if pa is None or pr is None:
            continue
        q = ratio(pa["pooled"], pr["pooled"])
        times = f"×{q:.2g}" if math.isfinite(q) else "ratio n/a: 2L-ReLU 0%"
        parts.append(
            f"{ATTACK_LABELS.get(a, a)} {pa['pooled']:.1f}% vs {pr['pooled']:.1f}% ({times})"
        )
        above += pa["ci_low"] > pr["ci_high"]
        below += pr["ci_low"] > pa["ci_high"]
    if not parts:
        return INCONCLUSIVE, []
    return (HOLDS if above == len(parts) else FAILS if below else INCONCLUSIVE), parts


def _grid_text(grid: list[dict]) -> str:
    """``binary lambda/abs_mean ×0.62 ×0.75 ×0.69; …`` (one ratio per attack)."""
    keys = dict.fromkeys((g["task"], g["rule"], g["ranking"]) for g in grid)
    if len({(k[1], k[2]) for k in keys}) < 2:
        return ""
    out = []
    for task, rule, ranking in keys:
        rs = [g for g in grid if (g["task"], g["rule"], g["ranking"]) == (task, rule, ranking)]
        ratios = " ".join(
            f"{g['attack']} ×{g['ratio']:.2g}" if g["ratio"] is not None else f"{g['attack']} n/a"
            for g in rs
        )
        out.append(f"{task} {rule}/{ranking} {ratios}")
    return "; ".join(out)


def _claim4(ds: str, rows: list[dict] | None) -> dict[str, Any]:
    t = "adversarial training raises 2L-ReLU's flip rate"
    used = [r for r in rows or [] if r["model"] == "2L-ReLU" and r["attack"] == "pgd"]
    v_all, stat = _adv_rule(used)
    if stat is None:
        return _claim(4, t, "PGD flip rate, standard → adversarial", NO_DATA, dataset=ds)
    kept, excluded, _, dropped = on_trained(used, lambda r: r["training"])
    v = v_all
    if excluded:
        v, kept_stat = _adv_rule(kept)
        stat = kept_stat or stat
        if dropped or kept_stat is None:
            v = _guarded(INCONCLUSIVE, used)
    stat += _excluded_text(excluded, _cells(used))
    return _claim(4, t, stat, v, dataset=ds, rule_verdict=v_all, excluded=excluded)


def _adv_rule(rows: list[dict]) -> tuple[str, str | None]:
    """2L-ReLU's pooled PGD flip rate, standard → adversarial training: holds when the
    adversarial CI lies above the standard one, does not hold when below; (…, None)
    without both."""
    std = _pooled(rows, "2L-ReLU", "pgd", "standard")
    adv = _pooled(rows, "2L-ReLU", "pgd", "adversarial")
    if std is None or adv is None:
        return INCONCLUSIVE, None
    stat = f"2L-ReLU PGD flip rate {std['mean']:.1f}% → {adv['mean']:.1f}%"
    if adv["ci_low"] > std["ci_high"]:
        return HOLDS, stat
    return (FAILS if adv["ci_high"] < std["ci_low"] else INCONCLUSIVE), stat


def _claim5(ds: str, rows: list[dict] | None) -> dict[str, Any]:
    t = "dual implication: G³ helps on targets aligned with G's top eigenvectors, hurts on the rest"
    if not rows:
        return _claim(5, t, "relative test MSE, G³ vs G", NO_DATA, dataset=ds)

    typed = [AlignmentRow.from_row(r) for r in rows]

    def rel(kernel: str, target: str) -> float:
        sel = [
            r
            for r in typed
            if r.kernel == kernel and r.target == target and abs(r.ridge - 1e-3) < 1e-12
        ]
        return sel[0].test_rel_mse if sel else float("nan")

    # The noisy eigen-targets when present: without noise G fits any linear target exactly.
    names = {r.target for r in typed}
    t_top, t_bot = (
        ("eig_top_noisy", "eig_bottom_noisy")
        if "eig_top_noisy" in names
        else ("eig_top", "eig_bottom")
    )
    top = (rel("G", t_top), rel("G3", t_top))
    bot = (rel("G", t_bot), rel("G3", t_bot))
    stat = (
        f"aligned: G {top[0]:.3g} vs G³ {top[1]:.3g}; misaligned: G {bot[0]:.3g} vs G³ {bot[1]:.3g}"
    )
    if not all(math.isfinite(x) for x in top + bot):
        return _claim(5, t, stat, INCONCLUSIVE, dataset=ds)
    helps, hurts = top[1] < top[0], bot[1] > bot[0]
    v = HOLDS if helps and hurts else FAILS if (not helps and not hurts) else INCONCLUSIVE
    return _claim(5, t, stat, v, dataset=ds)


INVARIANT6 = ("width_1d", "adaptive_sharpness")
"""Claim 6's invariant measures (docs/claims.md#claim-6), in the order the statistic
shows them; the first present gives the headline ratio (``measure``)."""


def _claim6(ds: str, rows: list[dict] | None) -> dict[str, Any]:
    """Claim 6 decided on the invariant measures (``INVARIANT6``: the filter-normalised
    basin width and adaptive sharpness; neither moves under the ReLU rescaling that moves
    λ_max): a verdict when every measure the run has agrees, inconclusive when they
    disagree (the statistic says which said what). λ_max's own verdict is beside it
    (``lambda_verdict``) with a note where it disagrees; runs written before either
    invariant measure existed are decided on λ_max, and the item says so (``measure``)."""
    t = "MLP-Attn finds flatter minima than 2L-ReLU"
    used = [r for r in rows or [] if r["model"] in MODELS]
    typed = [SharpnessRow.from_row(x) for x in used]
    measures = tuple(
        m for m in INVARIANT6 if typed and all(math.isfinite(getattr(x, m)) for x in typed)
    )
    invariant = bool(measures)

    def rule(rs: list[dict]) -> tuple[str, str | None, float, dict[str, str]]:
        if not invariant:
            return (*_sharp_rule(rs), {})
        return _invariant_rule6(rs, measures)

    v_all, stat, rt, each = rule(used)
    if stat is None:
        return _claim(6, t, "basin width at a fixed loss rise", NO_DATA, dataset=ds)
    kept, excluded, _, dropped = on_trained(used, lambda r: r["model"])
    v, lam_v, lam_stat = v_all, *_sharp_rule(used)[:2]
    if excluded:
        v, kept_stat, rt, kept_each = rule(kept)
        stat = kept_stat or stat
        each = kept_each or each
        lam_v, lam_kept = _sharp_rule(kept)[:2]
        lam_stat = lam_kept or lam_stat
        if dropped or kept_stat is None:
            v = _guarded(INCONCLUSIVE, used)
    extra: dict[str, Any] = {"measure": measures[0] if invariant else "hessian_top_eig"}
    if invariant:
        extra["measures"] = list(measures)
        extra.update({f"{m}_verdict": each[m] for m in measures if m in each})
        stat += f"; beside them {lam_stat}: {lam_v}"
        extra["lambda_verdict"] = lam_v
        if missing := [_NAMES6[m] for m in INVARIANT6 if m not in measures]:
            stat += f" (this run has no {' or '.join(missing)}: decided without it)"
        split = [m for m in measures if each.get(m) not in (None, lam_v)]
        if split:
            names = " and ".join(_NAMES6[m] for m in split)
            stat += (
                f" (λ_max disagrees with the {names}: it moves under a rescaling that "
                "keeps the function)"
            )
    else:
        stat += " (decided on raw λ_max: this run has no invariant measure)"
    stat += _excluded_text(excluded, _cells(used))
    return _claim(
        6, t, stat, v, dataset=ds, ratio=rt, rule_verdict=v_all, excluded=excluded, **extra
    )


_NAMES6 = {"width_1d": "basin width", "adaptive_sharpness": "adaptive sharpness"}


def _invariant_rule6(
    rows: list[dict], measures: tuple[str, ...]
) -> tuple[str, str | None, float, dict[str, str]]:
    """Each invariant measure's rule (``_width_rule6``, ``_adaptive_rule6``), then the
    verdict they agree on, else inconclusive, naming each one's verdict; (…, None, NaN, {})
    without both models. The ratio is the first measure's."""
    rules = {"width_1d": _width_rule6, "adaptive_sharpness": _adaptive_rule6}
    got = {m: rules[m](rows) for m in measures}
    if any(stat is None for _, stat, _ in got.values()):
        return INCONCLUSIVE, None, float("nan"), {}
    each = {m: v for m, (v, _, _) in got.items()}
    stat = "; ".join(str(s) for _, s, _ in got.values())
    verdicts = set(each.values())
    v = verdicts.pop() if len(verdicts) == 1 else INCONCLUSIVE
    if len(set(each.values())) > 1:
        said = ", ".join(f"{_NAMES6[m]} {each[m]}" for m in measures)
        stat += f" (the invariant measures disagree: {said})"
    return v, stat, got[measures[0]][2], each


def _adaptive_rule6(rows: list[dict]) -> tuple[str, str | None, float]:
    """Claim 6 on ``adaptive_sharpness`` (lower = flatter): MLP-Attn's mean + std below
    2L-ReLU's mean − std → holds; the reverse → does not hold; else inconclusive.
    (…, None, NaN) without both models."""
    typed = [SharpnessRow.from_row(x) for x in rows]
    a = mean_std([x.adaptive_sharpness for x in typed if x.model == "MLP-Attn"])
    r = mean_std([x.adaptive_sharpness for x in typed if x.model == "2L-ReLU"])
    if not (a[2] and r[2]):
        return INCONCLUSIVE, None, float("nan")
    rt = ratio(r.mean, a.mean)
    rho = next((x.adaptive_rho for x in typed if math.isfinite(x.adaptive_rho)), float("nan"))
    stat = (
        f"adaptive sharpness at ρ {rho:g} MLP-Attn {a[0]:.3g} ± {a[1]:.2g} vs 2L-ReLU "
        f"{r[0]:.3g} ± {r[1]:.2g} (ReLU/Attn ×{rt:.3g})"
    )
    if a[0] + a[1] < r[0] - r[1]:
        return HOLDS, stat, rt
    if r[0] + r[1] < a[0] - a[1]:
        return FAILS, stat, rt
    return INCONCLUSIVE, stat, rt


def _width_rule6(rows: list[dict]) -> tuple[str, str | None, float]:
    """Claim 6 on ``width_1d`` (wider = flatter): MLP-Attn's mean − std above 2L-ReLU's
    mean + std → holds; the reverse → does not hold; else inconclusive. A censored width
    (the basin reaches the grid's end) is a lower bound: it cannot be the narrower side
    of a verdict. (…, None, NaN) without both models."""
    typed = [SharpnessRow.from_row(x) for x in rows]
    a = mean_std([x.width_1d for x in typed if x.model == "MLP-Attn"])
    r = mean_std([x.width_1d for x in typed if x.model == "2L-ReLU"])
    if not (a[2] and r[2]):
        return INCONCLUSIVE, None, float("nan")
    cens = {x.model for x in typed if x.width_censored}
    rt = ratio(a.mean, r.mean)
    delta = next((x.width_delta for x in typed if math.isfinite(x.width_delta)), float("nan"))
    stat = (
        f"basin width at loss +{delta:g} MLP-Attn {a[0]:.3g} ± {a[1]:.2g} vs 2L-ReLU "
        f"{r[0]:.3g} ± {r[1]:.2g} (Attn/ReLU ×{rt:.3g})"
    )
    if cens:
        stat += f"; {', '.join(sorted(cens))} reach the grid's end (a lower bound)"
    if a[0] - a[1] > r[0] + r[1] and "2L-ReLU" not in cens:
        return HOLDS, stat, rt
    if r[0] - r[1] > a[0] + a[1] and "MLP-Attn" not in cens:
        return FAILS, stat, rt
    return INCONCLUSIVE, stat, rt


def _sharp_rule(rows: list[dict]) -> tuple[str, str | None, float]:
    """MLP-Attn's top Hessian eigenvalue below 2L-ReLU's by more than the seed spread →
    holds; above → does not hold; else inconclusive. (…, None, NaN) without both models."""
    typed = [SharpnessRow.from_row(x) for x in rows]
    a = mean_std([x.hessian_top_eig for x in typed if x.model == "MLP-Attn"])
    r = mean_std([x.hessian_top_eig for x in typed if x.model == "2L-ReLU"])
    if not (a[2] and r[2]):
        return INCONCLUSIVE, None, float("nan")
    rt = ratio(r.mean, a.mean)
    stat = f"λ_max MLP-Attn {a[0]:.4g} ± {a[1]:.2g} vs 2L-ReLU {r[0]:.4g} ± {r[1]:.2g} (ReLU/Attn ×{rt:.3g})"
    if a[0] + a[1] < r[0] - r[1] and (a[2] > 1 or a[0] < 0.9 * r[0]):
        return HOLDS, stat, rt
    if r[0] + r[1] < a[0] - a[1] and (r[2] > 1 or r[0] < 0.9 * a[0]):
        return FAILS, stat, rt
    return INCONCLUSIVE, stat, rt


ATTACK_LABELS = {"fgsm": "FGSM", "pgd": "PGD", "mim": "MIM"}
