"""FlipsPanel: flip rate [95% CI] per data set × model × attack × ε × training, with the paper's,
for the run's default protocol (``flip.ridge``, ``flip.ranking``), and the sensitivity grid
(MLP-Attn / 2L-ReLU ratio per ridge × ranking) when the run evaluated more than one, and
the influence estimators against retraining when the run holds ``influence_check``."""

from __future__ import annotations

import math

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from malleability_tui.format import model_color
from malleability_tui.plots import Axis
from malleability_tui.state import RunState
from malleability_tui.views.flips import FLIP_HEADERS, FlipRow, flip_columns, flip_rows
from malleability_tui.views.guards import guard_notes
from malleability_tui.widgets.plot_view import Figure, PlotView

GRID_HEADERS = ("ridge", "ranking", "attack", "ε", "MLP-Attn", "2L-ReLU", "Attn/ReLU")
CHECK_HEADERS = ("model", "estimator", "ridge", "ρ vs retraining", "sign agrees", "points", "seeds")


def check_cells(rows: list[dict], dataset: str = "") -> tuple[list[tuple[str, ...]], list[str]]:
    """Table cells of ``influence_check`` (``engine``'s summary: mean over seeds, best
    first per model) and its headline lines; empty without rows."""
    from engine.experiments.influence_check import ESTIMATOR_LABELS, summarize

    if not rows:
        return [], []
    s = summarize(rows, dataset)
    out: list[tuple[str, ...]] = []
    for model, m in s["models"].items():
        ests = sorted(
            m["estimators"],
            key=lambda t: (
                t["estimator"] == "retrain_other_order",
                -(t["spearman"] if math.isfinite(t["spearman"]) else -2),
            ),
        )
        for t in ests:
            best = m["closest"] is not None and (t["estimator"], t["ridge"]) == (
                m["closest"]["estimator"],
                m["closest"]["ridge"],
            )
            out.append(
                (
                    model,
                    ESTIMATOR_LABELS.get(t["estimator"], t["estimator"]) + (" ★" if best else ""),
                    t["ridge"] or "–",
                    f"{t['spearman']:.2f}" if math.isfinite(t["spearman"]) else "n/a",
                    f"{100 * t['sign_agreement']:.0f}%"
                    if math.isfinite(t["sign_agreement"])
                    else "n/a",
                    str(t["n_points"]),
                    str(t["seeds"]),
                )
            )
    return out, list(s["headline"])


def default_protocol_rows(rows: list[dict], spec: dict) -> list[dict]:
    """The rows of the spec's (a stored spec dict's) default protocol, by the engine's rule
    (``flip_summary.protocol_rows``, as ``reproduce`` keeps them)."""
    from engine.experiments.flip_summary import protocol_rows
    from engine.run.spec import FlipSpec

    f = spec.get("flip") or {}
    default = FlipSpec()
    return protocol_rows(rows, f.get("ridge", default.ridge), f.get("ranking", default.ranking))


def grid_cells(rows: list[dict]) -> list[tuple[str, ...]]:
    """Table cells of the sensitivity grid (standard training); empty for one protocol."""
    from engine.experiments.flip_summary import grid, protocols_in, typed

    std = [r for r in typed(rows) if (r.training or "standard") == "standard"]
    if len(protocols_in(std)) < 2:
        return []
    out: list[tuple[str, ...]] = []
    for c in grid(std):
        a, b = c["MLP-Attn"], c["2L-ReLU"]
        out.append(
            (
                str(c["ridge"]),
                str(c["ranking"]),
                str(c["attack"]).upper(),
                f"{c['eps']:g}",
                f"{a['pooled']:.1f}%" if a else "–",
                f"{b['pooled']:.1f}%" if b else "–",
                f"×{c['ratio']:.2f}" if c["ratio"] is not None else "–",
            )
        )
    return out


def adversarial_lines(rows: list[FlipRow]) -> list[str]:
    """``PGD ε=0.3 2L-ReLU: 3.3% → 43.4% (paper 3.3% → 43.4%)`` for each standard/adversarial pair."""
    std = {(r.dataset, r.model, r.attack, r.eps): r for r in rows if r.training == "standard"}
    out = []
    for r in rows:
        if r.training == "standard":
            continue
        s = std.get((r.dataset, r.model, r.attack, r.eps))
        if s is None or not math.isfinite(r.flip):
            continue
        line = f"{r.dataset} {r.attack.upper()} ε={r.eps:g} {r.model}: {100 * s.flip:.1f}% → {100 * r.flip:.1f}%"
        if s.paper is not None and r.paper is not None:
            line += f"  (paper {s.paper:.1f}% → {r.paper:.1f}%)"
        out.append(line)
    return out


def flip_bars(rows: list[FlipRow]) -> Figure:
    """Bars of the standard-training flip rate (%) per attack, one bar per model present,
    for the first data set and the largest ε (the paper's tables use ε = 0.3)."""
    std = [r for r in rows if r.training == "standard" and math.isfinite(r.flip)]
    if not std:
        return Figure(empty="no flip rates yet", title="flip rate %")
    ds = std[0].dataset
    eps = max(r.eps for r in std if r.dataset == ds)
    sel = [r for r in std if r.dataset == ds and r.eps == eps]
    attacks = list(dict.fromkeys(r.attack for r in sel))
    models = list(dict.fromkeys(r.model for r in sel))
    by = {(r.model, r.attack): 100 * r.flip for r in sel}
    groups = tuple(
        (m, tuple(by.get((m, a), math.nan) for a in attacks), model_color(m, models))
        for m in models
    )
    return Figure(
        bars=tuple(a.upper() for a in attacks),
        bar_groups=groups,
        y=Axis(label="flip %"),
        title=f"flip rate, {ds} ε={eps:g}",
    )


class FlipsPanel(Vertical):
    """The flip-rate table, a bar chart of it and the standard → adversarial comparison."""

    DEFAULT_CSS = """
    FlipsPanel DataTable { height: auto; max-height: 1fr; }
    FlipsPanel #flip-bars { height: 1fr; min-height: 8; }
    FlipsPanel #flip-grid { height: auto; max-height: 14; display: none; }
    FlipsPanel #flip-grid.shown { display: block; }
    FlipsPanel #flip-check { height: auto; max-height: 16; display: none; }
    FlipsPanel #flip-check.shown { display: block; }
    FlipsPanel #flip-notes { height: auto; max-height: 8; color: $text-muted; }
    """

    state: reactive[RunState] = reactive(RunState, always_update=True)

    def compose(self) -> ComposeResult:
        table: DataTable[str] = DataTable(id="flip-table", zebra_stripes=True, cursor_type="row")
        table.add_columns(*FLIP_HEADERS)
        yield table
        yield PlotView(id="flip-bars")
        grid: DataTable[str] = DataTable(id="flip-grid", zebra_stripes=True, cursor_type="row")
        grid.add_columns(*GRID_HEADERS)
        yield grid
        check: DataTable[str] = DataTable(id="flip-check", zebra_stripes=True, cursor_type="row")
        check.add_columns(*CHECK_HEADERS)
        yield check
        yield Static("", id="flip-notes")

    def watch_state(self, st: RunState) -> None:
        if not self.is_mounted:
            return
        classes = (st.spec.get("data") or {}).get("classes")
        all_rows = st.tables.get("flip_rates", [])
        rows = flip_rows(default_protocol_rows(all_rows, st.spec), classes)
        table = self.query_one("#flip-table", DataTable)
        keep, dropped = flip_columns(rows)
        if table.row_count != len(rows) or getattr(self, "_last", None) != rows:
            if getattr(self, "_columns", None) != keep:
                table.clear(columns=True)
                table.add_columns(*(FLIP_HEADERS[i] for i in keep))
                self._columns = keep
            table.clear()
            for r in rows:
                row_cells = r.cells()
                table.add_row(*(row_cells[i] for i in keep))
            self._last = rows
        self.query_one("#flip-bars", PlotView).figure = flip_bars(rows)
        cells = grid_cells(all_rows)
        grid = self.query_one("#flip-grid", DataTable)
        if getattr(self, "_last_grid", None) != cells:
            grid.clear()
            for c in cells:
                grid.add_row(*c)
            self._last_grid = cells
        grid.set_class(bool(cells), "shown")
        ccells, clines = check_cells(
            st.tables.get("influence_check", []), str((st.spec.get("data") or {}).get("name", ""))
        )
        check = self.query_one("#flip-check", DataTable)
        if getattr(self, "_last_check", None) != ccells:
            check.clear()
            for c in ccells:
                check.add_row(*c)
            self._last_check = ccells
        check.set_class(bool(ccells), "shown")
        notes = adversarial_lines(rows)
        if not rows:
            notes = (
                [] if ccells else ["No flip rates yet: run the flip (and advtrain) experiments."]
            )
        else:
            notes.insert(
                0,
                "[lo, hi]: 95% Wilson interval of the flips pooled over seeds · ρ: Spearman of "
                "influence ranks · ÷ReLU: mean flip rate over 2L-ReLU's · train: std(andard) or "
                "adv(ersarial) · paper: v1 Tables 2–4" + (f" · {dropped}" if dropped else ""),
            )
            if cells:
                notes.insert(
                    1,
                    "grid: pooled flip rates per ridge × ranking on the same models and attacked points (standard training)",
                )
            for training in dict.fromkeys(str(r.get("training") or "standard") for r in all_rows):
                mine = [r for r in all_rows if str(r.get("training") or "standard") == training]
                notes[:0] = [
                    n.replace("[yellow]", f"[yellow]{training}: ", 1) for n in guard_notes(mine)
                ]
        if ccells:
            notes.append(
                "influence check: ρ = Spearman of each estimator's s_i with retraining without i (★ closest)"
            )
            notes.extend(clines)
        self.query_one("#flip-notes", Static).update("\n".join(notes))
