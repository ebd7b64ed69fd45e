"""Pure formatting helpers: form ⇄ RunSpec, events/tables → series and rows.

No Textual here; every function is unit-tested without an app. Table rows may hold
numbers (live events) or strings (CSV read back from disk): ``num`` reads both.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from engine.errors import ConfigError, EngineError
from engine.models import MODEL_LABELS
from engine.results import mean_std, num, ratio, series_over_seeds
from engine.results.tables import FlipRateRow, LandscapeRow, SharpnessRow, typed_rows
from engine.run.spec import RunSpec
from malleability_tui.options import FORM_OPTIONS, OptionError, RunOption, parse_value
from malleability_tui.text import number as fmt

MODEL_NAMES = MODEL_LABELS
"""Model kind → label (the engine's registry, so a new model such as QKV-Attn shows up)."""
REFERENCE_MODEL = "2L-ReLU"
"""The model the others are compared with (flip-rate ratios)."""
MODEL_COLORS = {"2L-ReLU": "cyan", "MLP-Attn": "magenta", "QKV-Attn": "yellow"}
_EXTRA_COLORS = ("green", "blue", "red", "bright_white")


def model_color(label: str, present: list[str] | None = None) -> str:
    """A stable colour per model label; models without a fixed colour take the next free one."""
    if label in MODEL_COLORS:
        return MODEL_COLORS[label]
    others = [m for m in (present or [label]) if m not in MODEL_COLORS]
    i = others.index(label) if label in others else 0
    return _EXTRA_COLORS[i % len(_EXTRA_COLORS)]


def eta(elapsed: float, done: int, total: int) -> float | None:
    """Linear ETA in seconds from the fraction done (None before the first unit)."""
    if done <= 0 or total <= 0 or done > total:
        return None
    return elapsed * (total - done) / done


# -- the setup form --------------------------------------------------------------


FormField = RunOption
"""A text field of the setup form: a run option with a label (``malleability_tui.options``)."""
FORM_FIELDS = FORM_OPTIONS
"""The setup form's text fields, in order: the shared options table's labelled options."""
SELECT_FIELDS = {
    "dataset": ("data__name", "data.name"),
    "device": ("device", "device"),
    "dtype": ("dtype", "dtype"),
    "executor": ("executor__kind", "executor.kind"),
}
SELECT_OPTIONS = {
    "device": ("auto", "cpu", "cuda"),
    "dtype": ("float32", "float64"),
    "executor": ("local", "ray"),
}
"""The fixed choices of the selects other than the data set."""


def _join(v: Any) -> str:
    if v is None:
        return "all"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def spec_to_form(spec: RunSpec) -> dict[str, str]:
    """The text of every form field for ``spec``."""
    d = spec.to_dict()
    vals: dict[str, str] = {}
    for f in FORM_FIELDS:
        sec, _, name = f.spec_key.partition("__")
        v = d.get(sec, {}).get(name) if name else d.get(sec)
        if f.kind == "classes" and v is None:
            vals[f.key] = "all"
        else:
            vals[f.key] = _join(v) if v is not None or f.kind == "classes" else ""
    vals["dataset"] = spec.data.name
    vals["device"] = spec.device
    vals["dtype"] = spec.dtype
    vals["executor"] = spec.executor.kind
    return vals


def _experiment_error(name: str) -> str | None:
    try:
        from engine.experiments.registry import select

        select(name)
    except ConfigError as e:
        return f"{e.allowed}"
    return None


def _executor_errors(changes: dict[str, Any], errors: dict[str, str]) -> dict[str, str]:
    """An address without executor ray, or ray where it is not installed (the CLI's rule
    and its one-line install hint, ``executors.check_executor``)."""
    kind = changes.get("executor__kind")
    if kind is None or "executor" in errors:
        return {}
    if kind == "local" and changes.get("executor__address") and "address" not in errors:
        return {"address": "only used with executor ray (set Executor to ray, or clear it)"}
    if kind == "ray":
        from engine.run.executors import check_executor
        from engine.run.spec import ExecutorSpec

        try:
            check_executor(ExecutorSpec(kind="ray"))
        except ConfigError as e:
            return {"executor": e.allowed}
    return {}


def form_to_spec(base: RunSpec, values: dict[str, str]) -> tuple[RunSpec | None, dict[str, str]]:
    """Validate the form: (spec, {}) or (None, {form key: message}).

    Each field is checked on its own against ``base`` (the same ``RunSpec``
    validation as the CLI), so every wrong field gets its own message at once.
    """
    errors: dict[str, str] = {}
    changes: dict[str, Any] = {}
    by_error_field: dict[str, str] = {}
    items: list[tuple[str, str, str, Any]] = []
    for f in FORM_FIELDS:
        if f.key not in values:
            continue
        by_error_field[f.error_field] = f.key
        try:
            items.append((f.key, f.spec_key, f.error_field, parse_value(f.kind, values[f.key])))
        except OptionError as e:
            errors[f.key] = f"{f.label}: {e}"
    for key, (spec_key, err_field) in SELECT_FIELDS.items():
        if key in values:
            by_error_field[err_field] = key
            items.append((key, spec_key, err_field, values[key]))
    for key, spec_key, _err_field, val in items:
        try:
            base.replace(**{spec_key: val})
        except ConfigError as e:
            errors[by_error_field.get(e.field, key)] = f"{e.allowed} (got {e.value!r})"
            continue
        except (TypeError, ValueError) as e:
            errors[key] = str(e)
            continue
        changes[spec_key] = val
    if "experiment" in values and "experiment" not in errors:
        msg = _experiment_error(values["experiment"].strip())
        if msg:
            errors["experiment"] = msg
    errors.update(_executor_errors(changes, errors))
    if errors:
        return None, errors
    try:
        return base.replace(**changes), {}
    except ConfigError as e:  # a combination no single field shows
        return None, {by_error_field.get(e.field, "experiment"): f"{e.allowed} (got {e.value!r})"}


def error_text(err: BaseException) -> str:
    """One line for a dialog: the engine's message, or the exception's."""
    if isinstance(err, EngineError):
        return str(err)
    return f"{type(err).__name__}: {err}"


# -- width sweep -------------------------------------------------------------------


def sweep_series(
    rows: list[dict[str, Any]], column: str = "ntk_distance", table: str = "ntk_distance"
) -> dict[str, tuple[list[int], list[float], list[float], list[int]]]:
    """model → (widths, mean, sample std, n seeds) of ``column`` over seeds, widths sorted
    (``engine.results.series_over_seeds`` over ``table``'s typed rows)."""
    return {
        m: ([int(w) for w in ser.x], ser.mean, ser.std, ser.n)
        for m, ser in series_over_seeds(typed_rows(table, rows), "width", column).items()
    }


def guard_notes(rows: list[dict[str, Any]]) -> list[str]:
    """``⚠ MLP-Attn: at chance in 4 of 4 cells (m=16 seed=0, …): their numbers are not
    results`` per model that fails a guard, from the rows' ``converged`` / ``above_chance``
    columns (any table that has them: train, ntk_distance, flip_rates, sharpness), worded
    by ``engine.results.guards`` as every summary line is. Rows without the columns (older
    runs) say nothing."""
    from rich.markup import escape

    from engine.results import MARK, cells_of, failed_cells, guard_note

    failed = failed_cells(rows)
    out = []
    for model in dict.fromkeys(str(r.get("model", "?")) for r in rows):
        note = guard_note(failed, model, cells_of(rows, model))
        if note:
            out.append(
                f"[yellow]{MARK} {escape(model)}: {escape(note)}: their numbers are not results[/yellow]"
            )
    return out


def cell_label(cell: str) -> str:
    """``train/digits/attn/64/0`` → ``MLP-Attn m=64 seed 0 (digits)``."""
    parts = cell.split("/")
    if len(parts) >= 5:
        model = MODEL_NAMES.get(parts[2], parts[2])
        extra = " adversarial" if len(parts) > 5 and parts[5] == "adversarial" else ""
        return f"{model} m={parts[3]} seed {parts[4]} ({parts[1]}){extra}"
    return cell


def metric_series(
    metrics: dict[str, list[tuple[int, float]]], name: str
) -> tuple[list[float], list[float]]:
    pts = metrics.get(name, [])
    return [float(s) for s, _ in pts], [float(v) for _, v in pts]


# -- spectra --------------------------------------------------------------------------


def orders_beyond(m: float, reference: float = 1e12) -> float:
    return math.log10(m / reference) if m > 0 and math.isfinite(m) else math.nan


ORDERS_NOTE = (
    "orders = log₁₀(width needed / 10¹²): how many powers of ten the width lies beyond "
    "today's largest models (~10¹² parameters)"
)


def kappa_d_text(row: dict[str, Any]) -> str:
    """κ_d, or ``∞ (rank r < min(n, d))`` when the truncation still holds a zero eigenvalue."""
    kd = num(row.get("kappa_d"))
    n, d, r = num(row.get("n")), num(row.get("d")), num(row.get("rank"))
    if math.isfinite(kd):
        return fmt(kd)
    if math.isfinite(r) and math.isfinite(n) and math.isfinite(d) and r < min(n, d):
        return f"∞ (rank {int(r)} < min(n, d) = {int(min(n, d))})"
    return "∞" if math.isinf(kd) else "–"


def spectrum_lines(
    row: dict[str, Any], largest: float = 1e12, classes: Any = None
) -> list[tuple[str, str]]:
    """(label, value) pairs of one ``spectrum`` row: ours, then the paper's where it has one.

    Thresholds carry how many orders of magnitude they lie beyond ``largest`` (see
    ``ORDERS_NOTE``); the paper's κ and bounds come from ``engine.spectral.paper_spectrum``.
    """
    from engine.spectral import paper_spectrum

    name = str(row.get("dataset", "?"))
    paper = paper_spectrum(task_of(name)[0], tuple(classes) if classes else None)
    out = [
        ("data set", name),
        ("n × d, rank", f"{fmt(row.get('n'))} × {fmt(row.get('d'))}, rank {fmt(row.get('rank'))}"),
        (
            "κ(G) at rank",
            fmt(row.get("kappa_G")) + (f"   paper ≈ {fmt(paper.kappa, 2)}" if paper else ""),
        ),
        ("κ(G)³", fmt(row.get("kappa_G_cubed"))),
        ("κ(G³) measured", fmt(row.get("kappa_G3_direct"))),
        ("κ_d", kappa_d_text(row)),
    ]
    # the κ each threshold was computed from, as shown above (engine.spectral.thresholds:
    # v2 falls back to κ(G) when κ_d is infinite)
    v2_kappa = "κ_d" if math.isfinite(num(row.get("kappa_d"))) else "κ(G)"
    for key, label, pv in (
        ("width_threshold_v1", "m ≥ κ(G)⁶ (v1)", paper.m_v1 if paper else None),
        ("width_threshold_v2", f"m ≥ {v2_kappa}⁶ n ln n (v2)", paper.m_v2 if paper else None),
    ):
        m = num(row.get(key))
        o = orders_beyond(m, largest)
        text = fmt(m) + (f"  {o:+.1f} orders" if math.isfinite(o) else "")
        if pv is not None:
            text += f"   paper ≫ {fmt(pv, 2)}"
        out.append((label, text))
    return out


# -- flip rates -------------------------------------------------------------------------


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
            pct = f"{100 * self.flip:.1f}%"
            if math.isfinite(self.lo) and math.isfinite(self.hi):
                pct += f" [{100 * self.lo:.1f}, {100 * self.hi:.1f}]"
        else:
            pct = "–"
        return (
            self.dataset,
            self.model,
            self.attack.upper(),
            fmt(self.eps, 2),
            self.training,
            pct,
            fmt(self.spearman, 2),
            fmt(self.ratio, 3) if math.isfinite(self.ratio) else "–",
            f"{self.paper:.1f}%" if self.paper is not None else "–",
            str(self.n),
        )


FLIP_HEADERS = (
    "data",
    "model",
    "attack",
    "ε",
    "training",
    "flip [95% CI]",
    "ρ",
    "÷ReLU",
    "paper",
    "seeds",
)


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


# -- landscape -------------------------------------------------------------------------------


def landscape_curves(rows: list[dict[str, Any]]) -> dict[str, tuple[list[float], list[float]]]:
    """1-D curves (rows without β): ``model direction`` → (α, loss), α sorted."""
    acc: dict[str, list[tuple[float, float]]] = {}
    for r in map(LandscapeRow.from_row, rows):
        if math.isfinite(r.beta):
            continue
        label = f"{r.model or '?'} {r.direction}".strip()
        acc.setdefault(label, []).append((r.alpha, r.loss))
    return {
        k: ([a for a, _ in sorted(v)], [b for _, b in sorted(v)]) for k, v in sorted(acc.items())
    }


def landscape_surfaces(rows: list[dict[str, Any]]) -> dict[str, list[list[float]]]:
    """2-D surfaces (rows with β): model → grid[i_β][j_α] of the loss."""
    acc: dict[str, dict[tuple[float, float], float]] = {}
    for r in map(LandscapeRow.from_row, rows):
        if not math.isfinite(r.beta):
            continue
        acc.setdefault(r.model or "?", {})[(r.beta, r.alpha)] = r.loss
    out = {}
    for model, pts in sorted(acc.items()):
        betas = sorted({b for b, _ in pts})
        alphas = sorted({a for _, a in pts})
        out[model] = [[pts.get((b, a), math.nan) for a in alphas] for b in betas]
    return out


def landscape_axes(rows: list[dict[str, Any]], model: str) -> tuple[list[float], list[float]]:
    """The sorted α (columns) and β (rows) of ``model``'s 2-D surface."""
    pts = [
        (r.alpha, r.beta)
        for r in map(LandscapeRow.from_row, rows)
        if (r.model or "?") == model and math.isfinite(r.beta)
    ]
    return sorted({a for a, _ in pts}), sorted({b for _, b in pts})


def sharpness_rows(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(model, seeds, top eigenvalue mean ± std, trace mean ± std)."""
    by: dict[str, list[SharpnessRow]] = {}
    for r in map(SharpnessRow.from_row, rows):
        by.setdefault(r.model or "?", []).append(r)
    out = []
    for model, rs in sorted(by.items()):
        e, es, n = mean_std(r.hessian_top_eig for r in rs)
        t, ts, _ = mean_std(r.hessian_trace for r in rs)
        pm = (lambda m, sd: fmt(m)) if n <= 1 else (lambda m, sd: f"{fmt(m)} ± {fmt(sd, 2)}")
        out.append((model, str(n), pm(e, es), pm(t, ts)))
    return out


# -- runs ------------------------------------------------------------------------------------


def spec_brief(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """Key options of a spec dict (as stored) for the runs browser / compare view."""
    d, m, t, f = (spec.get(k, {}) for k in ("data", "model", "train", "flip"))
    return [
        ("experiment", str(spec.get("experiment", "?"))),
        (
            "data set",
            f"{d.get('name', '?')} classes={_join(d.get('classes'))} n={d.get('n_train', '?')}/{d.get('n_test', '?')}",
        ),
        ("models", _join(m.get("kinds"))),
        ("widths", _join(m.get("widths"))),
        ("seeds", _join(spec.get("seeds"))),
        (
            "training",
            f"{t.get('optimizer', '?')} lr={t.get('lr', '?')} epochs={t.get('epochs', '?')}",
        ),
        ("attacks", f"{_join(f.get('attacks'))} ε={_join(f.get('eps'))}"),
        ("device", f"{spec.get('device', '?')} {spec.get('dtype', '')}"),
    ]


def headline_numbers(summary: dict[str, Any], limit: int = 8) -> list[str]:
    """Headline strings of a summary dict (sections' ``headline`` lists), else a few scalars."""
    out: list[str] = []
    for sec, data in summary.items():
        if not isinstance(data, dict):
            continue
        lines = data.get("headline")
        if lines:
            out.extend(f"{sec}: {ln}" for ln in ([lines] if isinstance(lines, str) else lines))
        else:
            for k, v in data.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    out.append(f"{sec}.{k} = {fmt(v)}")
                elif (
                    isinstance(v, dict)
                    and v
                    and all(isinstance(x, (int, float)) for x in v.values())
                ):
                    out.append(f"{sec}.{k}: " + ", ".join(f"{kk} {fmt(x)}" for kk, x in v.items()))
    return out[:limit]
