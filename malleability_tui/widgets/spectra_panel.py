"""SpectraPanel: eigenvalues of G and G³ (log scale), κ(G), κ(G)³, κ(G³) and width thresholds;
for a trainability run, steps to the target loss against κ(G); for a kappa_sweep run, the
flip rate against κ(G)."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from engine.results import num
from engine.results.tables import EigenvalueRow
from malleability_tui.format import MODEL_COLORS
from malleability_tui.plots import Axis, Series
from malleability_tui.state import RunState
from malleability_tui.views.kappa import failed_points, kappa_points
from malleability_tui.views.spectra import (
    ORDERS_NOTE,
    spectra_view,
    spectrum_lines,
    spectrum_rank,
    stat_block,
)
from malleability_tui.views.trainability import trainability_points
from malleability_tui.widgets.focus_style import RestyleSelfOnFocus
from malleability_tui.widgets.plot_view import Figure, PlotView

STATS_WIDTH = 27
"""Columns the figures beside the chart are laid out for: the column's least width (30)
less its scroll bar and a margin, so that no value wraps at 80×24 or wider."""


class SpectraPanel(RestyleSelfOnFocus, Horizontal):
    """Left: both spectra; right: condition numbers and thresholds per data set."""

    DEFAULT_CSS = """
    SpectraPanel #eig-plot { width: 3fr; }
    SpectraPanel #spec-scroll { width: 2fr; min-width: 30; }
    SpectraPanel #spec-stats { height: auto; }
    """

    can_focus = True

    state: reactive[RunState] = reactive(RunState, always_update=True)

    def compose(self) -> ComposeResult:
        yield PlotView(id="eig-plot")
        with VerticalScroll(id="spec-scroll"):
            yield Static("", id="spec-stats")

    def watch_state(self, st: RunState) -> None:
        if not self.is_mounted:
            return
        eig_g: list[float] = []
        eig_g3: list[float] = []
        label = ""
        art = st.artifact("eigenvalues")
        if isinstance(art, dict) and art.get("eig_G") is not None:
            # In-process jobs hand numpy arrays, the worker's JSON lists: no truth test.
            g3 = art.get("eig_G3")
            eig_g, eig_g3 = list(art["eig_G"]), [] if g3 is None else list(g3)
            label = str(art.get("dataset", ""))
        elif st.tables.get("eigenvalues"):
            rows = sorted(
                map(EigenvalueRow.from_row, st.tables["eigenvalues"]), key=lambda r: num(r.index)
            )
            eig_g = [r.eig_G for r in rows]
            eig_g3 = [r.eig_G3 for r in rows]
        if not eig_g and st.tables.get("trainability"):
            self._trainability(st)
            return
        if not eig_g and st.tables.get("kappa_sweep"):
            self._kappa(st)
            return
        view = spectra_view(eig_g, eig_g3, spectrum_rank(st.tables.get("spectrum", []), label))
        series: tuple[Series, ...] = ()
        title = f"eigenvalues {label}".strip()
        if view.eig_g:
            n3 = len(view.eig_g3)
            series = (
                Series("λ(G)", view.idx, view.eig_g, color="cyan"),
                Series("λ(G³)", view.idx[:n3], view.eig_g3, color="magenta"),
            )
            if view.rank is not None and n3 and view.rank < len(view.eig_g):
                # the cut: λ(G³) stops at the numerical rank, marked by one point
                series += (
                    Series(
                        f"rank {view.rank}",
                        [view.rank],
                        [view.eig_g3[-1]],
                        color="yellow",
                        points=True,
                    ),
                )
                title += f" (λ(G³) to rank {view.rank})"
        self.query_one("#eig-plot", PlotView).figure = Figure(
            series,
            x=Axis(label="index", integer=True),
            y=Axis(log=True, label="eigenvalue"),
            title=title,
            empty="no spectrum yet: run the spectrum experiment",
        )
        largest = 1e12
        sec = st.summary.get("spectrum")
        if isinstance(sec, dict) and num(sec.get("largest_model_parameters")) > 0:
            largest = num(sec["largest_model_parameters"])
        parts = []
        classes = (st.spec.get("data") or {}).get("classes")
        for row in st.tables.get("spectrum", []):
            lines = spectrum_lines(row, largest, classes)
            parts.append("\n".join(stat_block(lines, STATS_WIDTH)))
        if parts:
            parts.append(f"[dim]{ORDERS_NOTE}. paper: v1 κ, v1/v2 bounds (m ≫ …)[/dim]")
        else:
            parts = ["[dim]κ(G), κ(G)³, κ(G³) and the width thresholds appear here.[/dim]"]
        self.query_one("#spec-stats", Static).update("\n\n".join(parts))

    def _trainability(self, st: RunState) -> None:
        """A trainability run: steps to the target against κ(G) per model (log–log; capped
        points marked apart), and the summary's slopes beside it."""
        from engine.experiments.trainability import SYNTHETIC

        series: list[Series] = []
        for p in trainability_points(st.tables["trainability"], SYNTHETIC):
            color = MODEL_COLORS.get(p.model, "")
            label = f"{p.model} (capped)" if p.censored else p.model
            series.append(Series(label, p.kappa, p.steps, color=color, points=True))
        self.query_one("#eig-plot", PlotView).figure = Figure(
            tuple(series),
            x=Axis(log=True, label="κ(G)"),
            y=Axis(log=True, label="steps to target"),
            title="trainability: steps vs κ(G)",
            empty="no trainability rows yet",
        )
        sec = st.summary.get("trainability")
        lines = list(sec.get("headline", [])) if isinstance(sec, dict) else []
        text = "\n\n".join(escape(ln) for ln in lines) or (
            "[dim]The slope of log(steps) on log κ(G) per model appears when the run ends.[/dim]"
        )
        self.query_one("#spec-stats", Static).update(text)

    def _kappa(self, st: RunState) -> None:
        """A kappa_sweep run: the flip rate against κ(G) per model (log x, 95 % intervals);
        points that failed a guard are named, not plotted; the fits beside it."""
        rows = st.tables["kappa_sweep"]
        series = [
            Series(
                p.model,
                p.kappa,
                p.values,
                err=p.errors,
                color=MODEL_COLORS.get(p.model, ""),
                points=True,
            )
            for p in kappa_points(rows)
        ]
        self.query_one("#eig-plot", PlotView).figure = Figure(
            tuple(series),
            x=Axis(log=True, label="κ(G)"),
            y=Axis(label="flip rate"),
            title="kappa_sweep: flip rate vs κ(G)",
            empty="no kappa_sweep points yet",
        )
        sec = st.summary.get("kappa_sweep")
        lines = list(sec.get("headline", [])) if isinstance(sec, dict) else []
        failed = failed_points(rows)
        if failed:
            lines.append("not plotted (failed a guard): " + ", ".join(failed))
        text = "\n\n".join(escape(ln) for ln in lines) or (
            "[dim]The fits against log κ(G) appear when the run ends.[/dim]"
        )
        self.query_one("#spec-stats", Static).update(text)
