"""The Spectra panel for a ``kappa_sweep`` run: flip rate against κ(G) (log x) per model;
a point that failed a guard is named, not plotted."""

from __future__ import annotations

import pytest
from tui_support import make_test_app

from engine.results import kappa as kr
from engine.results.tables import KappaSweepRow
from malleability_tui.state import RunState
from malleability_tui.views.kappa import failed_points, kappa_points
from malleability_tui.widgets.plot_view import PlotView
from malleability_tui.widgets.spectra_panel import SpectraPanel


def _rows() -> list[dict]:
    out = []
    for a, k, attn_ok in ((0.0, 2.6e5, False), (0.5, 6.8e4, True), (1.0, 2.9e4, True)):
        for m, rate in (("2L-ReLU", 0.2), ("MLP-Attn", 0.5)):
            good = attn_ok or m == "2L-ReLU"
            out.append(
                KappaSweepRow(
                    alpha=a,
                    model=m,
                    kappa_G=k,
                    flip_rate=rate if good else float("nan"),
                    flip_low=rate - 0.1,
                    flip_high=rate + 0.1,
                    slope_ok=True,
                    flip_ok=good,
                ).to_row()
            )
    return out


def test_points_per_model_sorted_by_kappa_without_the_failed_one():
    pts = {p.model: p for p in kappa_points(_rows())}
    assert pts["2L-ReLU"].kappa == [2.9e4, 6.8e4, 2.6e5] and pts["MLP-Attn"].kappa == [2.9e4, 6.8e4]
    assert pts["MLP-Attn"].errors == pytest.approx([0.1, 0.1])
    assert failed_points(_rows()) == ["α 0 MLP-Attn"]


async def test_the_spectra_panel_plots_a_kappa_sweep_run(tmp_path) -> None:
    rows = _rows()
    summary = {"kappa_sweep": kr.summarize([KappaSweepRow.from_row(r) for r in rows], "x")}
    app = make_test_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        panel = app.query_one(SpectraPanel)
        panel.state = RunState(tables={"kappa_sweep": rows}, summary=summary)
        await pilot.pause()
        fig = app.query_one("#eig-plot", PlotView).figure
        assert fig.title.startswith("kappa_sweep") and fig.x.log and not fig.y.log
        assert [s.label for s in fig.series] == ["2L-ReLU", "MLP-Attn"]
        stats = str(app.query_one("#spec-stats").render())
        assert "not plotted (failed a guard): α 0 MLP-Attn" in stats
