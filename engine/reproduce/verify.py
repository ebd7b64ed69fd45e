"""``reproduce --verify``: do the verdicts survive more training? (docs/guide.md)

What "continue" means here, precisely: per part, one seed is sampled (the first of the
part's seeds with the most cells passing both guards), and every model × width cell of
that seed that passed is retrained from its own initialisation and batch order (the
same seed) for ``EPOCHS_X`` × the most epochs any sampled cell of the part ran, with
``train.until = "fixed"``. The trainer is deterministic for a seed and its learning rate
constant, so the first E epochs of that run are the original cell's E epochs: the cell
is continued to at least twice its epochs. The continued rows replace the sampled
cells' rows (``ntk_distance``, ``flip_rates``, ``sharpness``), the checklist is decided
again (``compare``), and each item gets ``verify``:

``{"epochs_x", "epochs", "seed", "cells", "before", "after", "moved", "numbers"}``

``before`` / ``after``: the verdict (its first words); ``numbers``: per group of the
claim (claims 1, 7: model × width, the distance; 3: model × attack, the pooled flip rate;
4: training; 6: model, the basin width) the value before with its interval (mean ± std
over seeds; pooled rate: 95 % Wilson interval) and after; ``moved`` is True when the
verdict changed or a number left its interval. Claims 2 and 5 train nothing: no check.
The continued runs live in ``RUN/verify/<part>``; ``reproduce.json`` keeps the summary.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from engine.reproduce.claims import MODELS, _passes, _pooled
from engine.reproduce.plan import Part
from engine.results import mean_std, num

EPOCHS_X = 2
TRAINED = ("ntk", "flip", "advtrain", "landscape")
"""The experiments of a part that train cells (spectrum only reads the data)."""
TABLES = ("ntk_distance", "flip_rates", "sharpness")


def _labels() -> dict[str, str]:
    from engine.models import MODEL_LABELS

    return dict(MODEL_LABELS)


def sampled(
    part: Part,
    tables: dict[str, list[dict]],
    curves: dict[str, tuple[list[float], list[float]]],
    continued: Path | None = None,
) -> dict[str, Any] | None:
    """The sample of one part: ``{"seed", "cells": {(model, width)}, "epochs"}`` (epochs:
    the most any sampled cell ran, from the part's ``train_loss`` curves,
    ``engine.run.runs.train_curves``, read before a resume compacts its events), or None
    when no cell passed the guards or the part trains nothing. ``continued``: the
    continuation run of an earlier, interrupted check, whose epochs are kept (its cells
    resume) when the curves are gone."""
    rows = [r for t in TABLES for r in tables.get(t) or [] if r.get("model") in MODELS]
    if not rows or not set(part.spec.experiment.split(",")) & set(TRAINED):
        return None
    best, seed = -1, None
    for s in part.spec.seeds:
        n = sum(_passes(r) for r in rows if num(r.get("seed")) == s)
        if n > best:
            best, seed = n, s
    if best <= 0:
        return None
    cells = {
        (str(r["model"]), num(r.get("width")) if r.get("width") not in (None, "") else None)
        for r in rows
        if num(r.get("seed")) == seed and _passes(r)
    }
    labels = _labels()
    epochs = 0
    for cell, (xs, _) in curves.items():
        p = cell.split("/")  # experiment/dataset/kind/width/seed
        if len(p) >= 5 and p[-1] == str(seed) and xs:
            model, width = labels.get(p[2], p[2]), num(p[3])
            if (model, width) in cells or (model, None) in cells:
                epochs = max(epochs, int(max(xs)))
    if epochs == 0 and continued is not None and (continued / "spec.toml").is_file():
        from engine.run.spec import RunSpec

        epochs = RunSpec.load(continued / "spec.toml").train.epochs // EPOCHS_X
    if epochs == 0:  # no record of the epochs run: the cap, an upper bound
        epochs = max(part.spec.train.epochs, part.spec.train.max_epochs)
    return {"seed": seed, "cells": cells, "epochs": epochs}


def verify_part(part: Part, sample: dict[str, Any]) -> Part:
    """The part that continues ``sample``: its seed, the widths of its cells, the trained
    experiments, fixed at ``EPOCHS_X`` × the sample's epochs."""
    widths = sorted({w for _, w in sample["cells"] if w is not None}) or list(
        part.spec.model.widths
    )
    exps = [e for e in part.spec.experiment.split(",") if e in TRAINED]
    spec = part.spec.replace(
        seeds=(sample["seed"],),
        model__widths=tuple(int(w) for w in widths),
        experiment=",".join(exps),
        train__until="fixed",
        train__epochs=EPOCHS_X * sample["epochs"],
    )
    return Part(part.key, part.dataset, part.task, spec, part.role, part.note, part.protocol)


def substitute(
    tables: dict[str, list[dict]], continued: dict[str, list[dict]], sample: dict[str, Any]
) -> dict[str, list[dict]]:
    """``tables`` with the sampled cells' rows replaced by the continued run's rows."""
    out = dict(tables)

    def mine(r: dict) -> bool:
        w = num(r.get("width")) if r.get("width") not in (None, "") else None
        return num(r.get("seed")) == sample["seed"] and (
            (str(r.get("model")), w) in sample["cells"]
            or (str(r.get("model")), None) in sample["cells"]
        )

    for t in TABLES:
        if t in tables and t in continued:
            out[t] = [r for r in tables[t] if not mine(r)] + [r for r in continued[t] if mine(r)]
    return out


def _numbers(item: dict[str, Any], stats: dict[str, Any]) -> dict[str, tuple[float, float, float]]:
    """The claim's numbers per group: name → (value, interval low, interval high), on the
    cells that pass both guards (as the verdict), groups without a finite value left out."""
    claim, out = int(item["claim"]), {}

    def passing(name: str) -> list[dict]:
        return [r for r in stats.get(name) or [] if _passes(r)]

    if claim in (1, 7):
        rows = passing("ntk_gd" if str(item.get("sweep", "")).startswith("full") else "ntk")
        # the verdict's column: the linearized twin's distance, else the paper's
        lin = any(math.isfinite(num(r.get("lin_distance_rel"))) for r in rows)
        col = "lin_distance_rel" if lin else "ntk_distance"
        per: dict[str, list[float]] = {}
        for r in rows:
            per.setdefault(f"{r['model']} m={num(r['width']):g}", []).append(num(r.get(col)))
        for name, vals in per.items():
            m, s, n = mean_std(vals)
            if n:
                out[name] = (m, m - s, m + s)
    elif claim in (3, 4):
        rows = [r for r in stats.get("flip") or stats.get("flip_binary") or [] if _passes(r)]
        groups = (
            [(m, a, "standard") for m in MODELS for a in ("fgsm", "pgd", "mim")]
            if claim == 3
            else [("2L-ReLU", "pgd", t) for t in ("standard", "adversarial")]
        )
        for model, attack, training in groups:
            p = _pooled(rows, model, attack, training)
            if p:
                out[f"{model} {attack} {training}"] = (p["pooled"], p["ci_low"], p["ci_high"])
    elif claim == 6:
        # the measures that decided (both invariant ones when the run has them)
        cols = item.get("measures") or [
            "width_1d" if item.get("measure") == "width_1d" else "hessian_top_eig"
        ]
        for col in cols:
            for model in MODELS:
                rows = passing("sharpness")
                vals = [num(r.get(col)) for r in rows if r.get("model") == model]
                mu, sd, n = mean_std(vals)
                if n:
                    out[f"{model} {col}"] = (mu, mu - sd, mu + sd)
    return out


def verdicts_moved(
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    stats_before: dict[Any, Any],
    stats_after: dict[Any, Any],
    info: dict[Any, dict[str, Any]],
) -> None:
    """Write ``verify`` into each item of ``before`` (the checklist) from the matching
    item of ``after``; ``info[(dataset, protocol)]``: seed, cells and epochs continued."""

    def key(i: dict[str, Any]) -> tuple[Any, ...]:
        return (i.get("dataset"), i.get("protocol"), i["claim"], i.get("sweep", ""))

    later = {key(i): i for i in after}
    for item in before:
        if int(item["claim"]) in (2, 5):
            continue
        k = (item.get("dataset"), item.get("protocol"))
        got = info.get(k)
        if not got:
            item["verify"] = {"epochs_x": EPOCHS_X, "moved": None, "note": "no converged cell"}
            continue
        new = later.get(key(item), {})
        b, a = _numbers(item, stats_before.get(k, {})), _numbers(new, stats_after.get(k, {}))
        nums = {n: [v[0], v[1], v[2], a[n][0]] for n, v in b.items() if n in a}
        left = any(not (lo - 1e-12 <= after <= hi + 1e-12) for _, lo, hi, after in nums.values())
        vb, va = str(item["verdict"]).split(":")[0], str(new.get("verdict", "")).split(":")[0]
        item["verify"] = {
            "epochs_x": EPOCHS_X,
            **got,
            "before": vb,
            "after": va,
            "moved": vb != va or left,
            "numbers": nums,
        }


def stats_of(runs: dict[str, dict[str, Any]], parts: list[Part]) -> dict[Any, dict[str, Any]]:
    """(dataset, protocol) → the rows ``_numbers`` reads, as ``compare`` gathers them."""
    from engine.reproduce.compare import _default_protocol

    out: dict[Any, dict[str, Any]] = {}
    for part in parts:
        t = runs.get(part.key, {}).get("tables", {})
        st = out.setdefault((part.dataset, part.protocol), {})
        if part.role == "gd":
            st["ntk_gd"] = t.get("ntk_distance")
        elif part.task == "multiclass":
            st.update(
                ntk=t.get("ntk_distance"),
                flip=_default_protocol(t.get("flip_rates"), part),
                sharpness=t.get("sharpness"),
            )
        else:
            st["flip_binary"] = _default_protocol(t.get("flip_rates"), part)
    return out


def verify(
    path: Path,
    parts: list[Part],
    runs: dict[str, dict[str, Any]],
    checklist: list[dict[str, Any]],
    run_part: Any,
    curves: dict[str, Any],
) -> dict[str, Any]:
    """Continue each part's sample (module docstring) into ``path/verify/<part>`` with
    ``run_part(part, run_dir, resume)``, write ``verify`` into the items of ``checklist``
    and return the run's record: ``{"epochs_x", "parts", "checked", "moved", "moved_claims"}``.
    ``curves``: part key → its ``train_curves``, read before the parts ran again."""
    import time

    from engine.reproduce.compare import compare
    from engine.run.runs import read_run

    t0 = time.perf_counter()
    after = dict(runs)
    info: dict[Any, dict[str, Any]] = {}
    done: dict[str, Any] = {}
    for part in parts:
        tables = runs.get(part.key, {}).get("tables")
        sub = path / "verify" / part.key
        s = sampled(part, tables, curves.get(part.key, {}), sub) if tables else None
        if s is None or tables is None:
            continue
        vp = verify_part(part, s)
        run_part(vp, sub, (sub / "events.jsonl").exists())
        cont = read_run(sub)["tables"]
        after[part.key] = {**runs[part.key], "tables": substitute(tables, cont, s)}
        rec = {"seed": s["seed"], "cells": len(s["cells"]), "epochs": EPOCHS_X * s["epochs"]}
        done[part.key] = rec
        info.setdefault((part.dataset, part.protocol), {"parts": {}})["parts"][part.key] = rec
    new = compare(after, parts)["checklist"]
    single = len({p.protocol for p in parts}) == 1
    items = [dict(i, protocol=i.get("protocol", parts[0].protocol)) for i in checklist]
    new = [dict(i, protocol=i.get("protocol", parts[0].protocol)) for i in new]
    verdicts_moved(items, new, stats_of(runs, parts), stats_of(after, parts), info)
    for old, item in zip(checklist, items):
        if "verify" in item:
            old["verify"] = item["verify"]
    moved = [
        f"{i['dataset']}{'' if single else '/' + str(i['protocol'])} claim {i['claim']}"
        for i in items
        if i.get("verify", {}).get("moved")
    ]
    checked = sum(i.get("verify", {}).get("moved") is not None for i in items)
    return {
        "epochs_x": EPOCHS_X,
        "parts": done,
        "checked": checked,
        "moved": bool(moved),
        "moved_claims": moved,
        "seconds": time.perf_counter() - t0,
    }
