"""Reproduce the paper in one run: the plan (which experiments on which subsets) and
the comparison (the paper's number beside ours for every table cell, and the claims
checklist decided by written rules).

The comparison reads only the run directories' CSV tables (the public contract), so
it works the same on a run that just finished and on one reopened from disk.

Checklist rules (README "Claims checklist"), α = 0.05:

1. Non-convergence — on the distance to each model's linearized twin (``lin_distance_rel``;
   ``ntk_distance`` for runs without it), Spearman ρ vs log₂ width over every (width, seed)
   row. Holds: 2L-ReLU's falls (ρ < 0, p < α) and MLP-Attn's does not fall, or stays above
   2L-ReLU's at every width by more than the seed spread (std_A + std_R, sample stds over
   seeds). Does not hold: 2L-ReLU's does not fall, or MLP-Attn's falls without staying
   above. Inconclusive: fewer than 4 widths. Stated twice where ``reproduce`` ran both
   sweeps: the paper's (Adam, 10-class) and full-batch GD on the binary subset (σ_w and lr
   of ``GD_SWEEP``, as in sample_data/configs/ntk_digits_3v8_sigma1_gd.toml).
2. Spectral amplification — r = κ(G³)measured / κ(G)³. Holds: |log₁₀ r| ≤ log₁₀ 2.
   Inconclusive: κ(G)³ > 1e15 (float64 cannot resolve κ(G³)). Otherwise does not hold.
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
6. Flatter minima — top Hessian eigenvalue per model, mean ± std over seeds. Holds:
   MLP-Attn's mean + std < 2L-ReLU's mean − std. Does not hold: the reverse. Else
   inconclusive (including a single seed, where the spread is unknown, if the means are
   within 10%).
7. (v2) Trainable attention (QKV-Attn) — the claim-1 rule with QKV-Attn in MLP-Attn's place
   on the distance to each model's linearized twin (``lin_distance_rel``; QKV-Attn has no
   analytic Θ∞). Holds: 2L-ReLU's falls and QKV-Attn's does not. Does not hold: 2L-ReLU's
   does not fall, or both fall. Inconclusive: fewer than 4 widths. No data: QKV-Attn not
   among the models (``--models relu,attn,qkv``) or no linearized-twin column.

Guards (``engine.results.guards``): claims 1, 3, 6 and 7 are "inconclusive: models not
converged" (or "… at chance") when any trained cell behind their rows fails a guard; the
statistic is still shown beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from engine.reproduce.presets import apply_quick, cap_sizes
from engine.results import guard_verdict, mean_std, num, ratio, spearman
from engine.results.tables import AlignmentRow, NtkDistanceRow, SharpnessRow, SpectrumRow
from engine.run.spec import DataSpec, RunSpec

ALPHA = 0.05
BINARY_CLASSES: dict[str, tuple[int, int]] = {
    "mnist": (3, 8),  # paper: MNIST 3 vs 8
    "cifar10": (1, 0),  # paper: automobile vs airplane
    "fashion-mnist": (0, 6),  # ours: T-shirt/top vs shirt (the supplement does not say)
    "digits": (3, 8),  # ours, as MNIST
}
TABLE1_WIDTHS = (16, 1024, 4096)
GRID_RIDGES = ("lambda", "objective")
"""Claim 3's sensitivity grid on the binary subsets: the literal λ vs the objective ridge …"""
GRID_RANKINGS = ("abs_mean", "abs_signed_mean")
"""… × mean |I| (the earlier default) vs |mean I| (PAPER.md §6a)."""
ATTACK_LABELS = {"fgsm": "FGSM", "pgd": "PGD", "mim": "MIM"}
MODELS = ("2L-ReLU", "MLP-Attn")
HOLDS, FAILS, INCONCLUSIVE, NO_DATA = "holds", "does not hold", "inconclusive", "no data"
GD_SWEEP: dict[str, Any] = {"train__optimizer": "gd", "train__lr": 1.0, "model__sigma_w": 1.0}
"""Claim 1's second sweep (binary subset): full-batch GD, lr 1, σ_w = 1, the settings of
sample_data/configs/ntk_digits_3v8_sigma1_gd.toml (tests check they agree)."""


@dataclass(frozen=True)
class Part:
    """One sub-run of a reproduction: a data subset and the experiments it feeds."""

    key: str
    """Sub-folder name, e.g. ``mnist-multiclass``."""
    dataset: str
    task: str
    """multiclass (10-class tables 1, 2, 4) or binary (table 3)."""
    spec: RunSpec
    role: str = "main"
    """main, or gd: claim 1's full-batch GD sweep on the binary subset."""
    note: str = ""
    """One line when the subset sizes were capped to what the data set has (``cap_sizes``)."""


def _binary_data(name: str, data_dir: str | None, base: RunSpec) -> tuple[DataSpec, str]:
    """The binary subset of ``name`` (its ``BINARY_CLASSES`` pair, sizes capped to what a
    one-split data set holds) and the note saying so, for the binary and GD parts."""
    n_tr, n_te, note = _binary_sizes(name, base.data.n_train, base.data.n_test)
    data = DataSpec(
        name=name,
        data_dir=data_dir,
        classes=BINARY_CLASSES.get(name, (0, 1)),
        n_train=n_tr,
        n_test=n_te,
        transductive=base.data.transductive,
    )
    return data, note


def plan(
    datasets: tuple[str, ...],
    *,
    tables: tuple[int, ...] = (1, 2, 3, 4),
    seeds: tuple[int, ...] | None = None,
    quick: bool = False,
    data_dir: str | None = None,
    device: str = "auto",
    base: RunSpec | None = None,
    overrides: dict[str, Any] | None = None,
) -> list[Part]:
    """The sub-runs that compute ``tables`` (and κ, the dual implication and the
    landscape, always) for each data set. Each trains each model × width × seed once.
    ``overrides`` (``section__field`` keys) apply after the --quick preset."""
    base = base or RunSpec()
    if quick:
        base = apply_quick(base)
    base = base.replace(device=device, **(overrides or {}))
    if seeds is not None:  # None: the preset's seeds (--quick: one), else the spec's
        base = base.replace(seeds=seeds)
    parts = []
    for name in datasets:
        multi = ["spectrum", "landscape"]
        if 1 in tables:
            multi.append("ntk")
        if 2 in tables or 4 in tables:
            multi.append("flip")
        if 4 in tables:
            multi.append("advtrain")
        data = DataSpec(
            name=name,
            data_dir=data_dir,
            classes=None,
            n_train=base.data.n_train,
            n_test=base.data.n_test,
            transductive=base.data.transductive,
        )
        parts.append(
            Part(
                f"{name}-multiclass",
                name,
                "multiclass",
                base.replace(experiment=",".join(multi), data=data),
            )
        )
        if 3 in tables:
            bdata, note = _binary_data(name, data_dir, base)
            bspec = base.replace(experiment="spectrum,flip", data=bdata)
            if not (
                base.flip.ridges or base.flip.rankings
            ):  # the sensitivity grid (README claim 3)
                bspec = bspec.replace(flip__ridges=GRID_RIDGES, flip__rankings=GRID_RANKINGS)
            parts.append(Part(f"{name}-binary", name, "binary", bspec, note=note))
        if 1 in tables:  # claim 1 under full-batch GD beside the paper's Adam (README claim 1)
            gdata, note = _binary_data(name, data_dir, base)
            gspec = base.replace(experiment="ntk", data=gdata, **GD_SWEEP)
            parts.append(Part(f"{name}-binary-gd", name, "binary", gspec, role="gd", note=note))
    return parts


def _binary_sizes(name: str, n_train: int, n_test: int) -> tuple[int, int, str]:
    """Two classes of a one-split data set (digits: ~180 images a class) cannot give the
    10-class sizes: ``presets.cap_sizes`` for two classes (sizes and its one-line note)."""
    s = cap_sizes(name, 2, n_train, n_test)
    return s.n_train, s.n_test, s.note


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
    stats: dict[str, Any] = {}
    for part in parts:
        run = runs.get(part.key, {"missing": "not run"})
        tables = run.get("tables", {})
        reason = run.get("missing")
        flips = _default_protocol(tables.get("flip_rates"), part)
        grid_cells = _flip_grid(part.dataset, part.task, tables.get("flip_rates"))
        out["flip_grid"] += grid_cells
        stats.setdefault(part.dataset, {}).setdefault("grid", []).extend(grid_cells)
        if part.role == "gd":
            stats[part.dataset]["ntk_gd"] = None if reason else tables.get("ntk_distance")
        elif part.task == "multiclass":
            out["table1"] += _table1(part.dataset, tables.get("ntk_distance"), reason)
            out["table2"] += _flip_table(2, part.dataset, flips, reason)
            out["table4"] += _table4(part.dataset, flips, reason)
            out["kappa"] += _kappa(part.dataset, tables.get("spectrum"), reason)
            stats[part.dataset].update(
                ntk=tables.get("ntk_distance"),
                flip=flips,
                spectrum=tables.get("spectrum"),
                alignment=tables.get("alignment"),
                sharpness=tables.get("sharpness"),
                reason=reason,
            )
        else:
            out["table3"] += _flip_table(3, part.dataset, flips, reason)
            stats[part.dataset]["flip_binary"] = flips
    out["checklist"] = checklist(stats)
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


def _default_protocol(rows: list[dict] | None, part: Part) -> list[dict] | None:
    """The rows of the part's default protocol (``flip.ridge``, ``flip.ranking``)."""
    from engine.experiments.flip_summary import same_rule, typed

    if rows is None:
        return None
    f = part.spec.flip
    return [  # the dicts, for the guards (which read any table's rows)
        d
        for d, r in zip(rows, typed(rows))
        if same_rule(r.ridge, f.ridge) and r.ranking == f.ranking
    ]


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
    for attack in ("fgsm", "pgd", "mim"):
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


def _claim(n: int, claim: str, statistic: str, verdict: str, **values: Any) -> dict[str, Any]:
    """One checklist item; a guarded verdict (``_guarded``) keeps the rule's own verdict
    as ``rule_verdict`` and says it at the end of the statistic."""
    rule = values.pop("rule_verdict", None)
    if rule is not None and rule != verdict:
        statistic += f" (the rule alone: {rule})"
        values["rule_verdict"] = rule
    return {"claim": n, "title": claim, "statistic": statistic, "verdict": verdict, **values}


def checklist(stats: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Six claims and v2's (7) × data sets → holds / does not hold / inconclusive / no data."""
    items = []
    for ds, s in stats.items():
        items.append(_claim1(ds, s.get("ntk"), "Adam, 10-class" if "ntk_gd" in s else ""))
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
    """Claim 1's rule on ``column`` (module docstring): ``ref`` falls with log₂ m (ρ < 0,
    p < α) and ``other`` does not fall or stays above ``ref`` by more than the seed spread
    at every width → holds; fewer than 4 widths or NaN ρ → inconclusive; else does not
    hold. A cell failing a guard makes it inconclusive (``_guarded``)."""
    res, per_width = {}, {}
    typed = [NtkDistanceRow.from_row(r) for r in rows]
    for model in (ref, other):
        sel = [
            (float(r.width), float(getattr(r, column)))
            for r in typed
            if r.model == model and r.width is not None and math.isfinite(getattr(r, column))
        ]
        xs = [math.log2(w) for w, _ in sel]
        res[model] = spearman(xs, [v for _, v in sel]) + (len(set(xs)),)
        per_width[model] = {
            w: mean_std(v for wv, v in sel if wv == w) for w in {wv for wv, _ in sel}
        }
    (rr, pr, nw), (ro, po, no) = res[ref], res[other]
    common = sorted(set(per_width[ref]) & set(per_width[other]))
    above = bool(common) and all(
        per_width[other][w].mean - per_width[ref][w].mean
        > per_width[other][w].std + per_width[ref][w].std
        for w in common
    )
    stat = (
        f"ρ {ref} {rr:+.2f} (p={pr:.2g}), {other} {ro:+.2f} (p={po:.2g}) over {min(nw, no)} widths"
    )
    if common:
        stat += f"; {other} above {ref} by more than the seed spread at {'every' if above else 'not every'} width"
    other_falls = ro < 0 and po < ALPHA
    if min(nw, no) < 4 or not (math.isfinite(rr) and math.isfinite(ro)):
        v = INCONCLUSIVE
    elif rr < 0 and pr < ALPHA and (not other_falls or above):
        v = HOLDS
    else:
        v = FAILS
    used = [r for r in rows if r["model"] in (ref, other)]
    vals: dict[str, Any] = {
        "rho_ref": rr,
        "p_ref": pr,
        "rho_other": ro,
        "p_other": po,
        "other_above": above,
        "rule_verdict": v,
    }
    return _guarded(v, used), stat, vals


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
    if not math.isfinite(r):
        v = INCONCLUSIVE
    elif abs(math.log10(r)) <= math.log10(2):
        v = HOLDS
    elif kc > 1e15:
        v = INCONCLUSIVE
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
    flips ran), with the sensitivity grid's MLP-Attn / 2L-ReLU ratios beside it."""
    from engine.experiments.flip_summary import typed

    t = "influence malleability: MLP-Attn's influence flips more often than 2L-ReLU's"
    side = _grid_text(grid or [])
    task = "10-class"
    if not rows:
        rows, task = binary, "binary"
    if not rows:
        return _claim(
            3,
            t,
            "flip-rate ratio MLP-Attn / 2L-ReLU with 95% Wilson CIs",
            NO_DATA,
            dataset=ds,
            grid=grid or [],
        )
    parts, above, below = [], 0, 0
    attacks = sorted({r.attack for r in typed(rows) if r.training == "standard"})
    for a in attacks:
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
        return _claim(3, t, "flip-rate ratio", NO_DATA, dataset=ds, grid=grid or [])
    r0 = rows[0]
    v = HOLDS if above == len(parts) else FAILS if below else INCONCLUSIVE
    rule, v = (
        v,
        _guarded(v, [r for r in rows if r["training"] == "standard" and r["model"] in MODELS]),
    )
    stat = f"{task}, ridge {r0.get('ridge')}, ranking {r0.get('ranking')}: " + "; ".join(parts)
    if side:
        stat += f" | grid (MLP-Attn/2L-ReLU): {side}"
    return _claim(3, t, stat, v, dataset=ds, grid=grid or [], rule_verdict=rule)


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
    std = _pooled(rows or [], "2L-ReLU", "pgd", "standard")
    adv = _pooled(rows or [], "2L-ReLU", "pgd", "adversarial")
    if std is None or adv is None:
        return _claim(4, t, "PGD flip rate, standard → adversarial", NO_DATA, dataset=ds)
    stat = f"2L-ReLU PGD flip rate {std['mean']:.1f}% → {adv['mean']:.1f}%"
    v = (
        HOLDS
        if adv["ci_low"] > std["ci_high"]
        else FAILS
        if adv["ci_high"] < std["ci_low"]
        else INCONCLUSIVE
    )
    return _claim(4, t, stat, v, dataset=ds)


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


def _claim6(ds: str, rows: list[dict] | None) -> dict[str, Any]:
    t = "MLP-Attn finds flatter minima than 2L-ReLU"
    if not rows:
        return _claim(6, t, "top Hessian eigenvalue", NO_DATA, dataset=ds)
    typed = [SharpnessRow.from_row(x) for x in rows]
    a = mean_std([x.hessian_top_eig for x in typed if x.model == "MLP-Attn"])
    r = mean_std([x.hessian_top_eig for x in typed if x.model == "2L-ReLU"])
    if not (a[2] and r[2]):
        return _claim(6, t, "top Hessian eigenvalue", NO_DATA, dataset=ds)
    rt = ratio(r.mean, a.mean)
    stat = f"λ_max MLP-Attn {a[0]:.4g} ± {a[1]:.2g} vs 2L-ReLU {r[0]:.4g} ± {r[1]:.2g} (ReLU/Attn ×{rt:.3g})"
    if a[0] + a[1] < r[0] - r[1] and (a[2] > 1 or a[0] < 0.9 * r[0]):
        v = HOLDS
    elif r[0] + r[1] < a[0] - a[1] and (r[2] > 1 or r[0] < 0.9 * a[0]):
        v = FAILS
    else:
        v = INCONCLUSIVE
    g = _guarded(v, [r for r in rows if r["model"] in MODELS])
    return _claim(6, t, stat, g, dataset=ds, ratio=rt, rule_verdict=v)
