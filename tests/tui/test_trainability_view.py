"""A trainability run in the Spectra panel: steps against κ(G) per model, log–log, the
capped points apart, the summary's slopes beside the plot."""

from __future__ import annotations

from tui_support import make_test_app

from engine.experiments.trainability import SYNTHETIC, summarize
from malleability_tui.state import RunState
from malleability_tui.views.trainability import trainability_points
from malleability_tui.widgets.plot_view import PlotView
from malleability_tui.widgets.spectra_panel import SpectraPanel


def _rows() -> list[dict]:
    rows = []
    for model, slope in (("2L-ReLU", 1.0), ("MLP-Attn", 3.0)):
        for kappa in (10.0, 100.0, 1000.0):
            steps = int(10 * kappa**slope) if kappa**slope < 1e6 else 20_000
            rows.append(
                {
                    "dataset": SYNTHETIC,
                    "kappa_G": str(kappa),
                    "kappa_G3": str(kappa**3),
                    "model": model,
                    "seed": "0",
                    "steps_to_converge": str(min(steps, 20_000)),
                    "censored": str(steps >= 20_000),
                    "final_loss": "0.01",
                }
            )
        for seed in ("1", "2"):
            rows.append({**rows[-1], "dataset": "digits", "seed": seed, "censored": "False"})
    return rows


def test_points_split_measured_from_capped_per_model() -> None:
    pts = trainability_points(_rows(), SYNTHETIC)
    assert [(p.model, p.censored, len(p.kappa)) for p in pts] == [
        ("2L-ReLU", False, 3),
        ("MLP-Attn", False, 1),
        ("MLP-Attn", True, 2),
    ]
    assert pts[0].steps == [100.0, 1000.0, 10000.0]
    assert trainability_points(_rows(), "nothing") == []


async def test_the_spectra_panel_plots_a_trainability_run(tmp_path) -> None:
    rows = _rows()
    summary = {"trainability": summarize(rows)}
    app = make_test_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        panel = app.query_one(SpectraPanel)
        panel.state = RunState(tables={"trainability": rows}, summary=summary)
        await pilot.pause()
        fig = app.query_one("#eig-plot", PlotView).figure
        assert fig.title.startswith("trainability")
        assert fig.x.log and fig.y.log
        assert [s.label for s in fig.series] == ["2L-ReLU", "MLP-Attn", "MLP-Attn (capped)"]
        stats = str(app.query_one("#spec-stats").render())
        assert "slope" in stats and "MLP-Attn" in stats
        # the real data set's line names its seeds once, not a clause per seed
        line = next(h for h in summary["trainability"]["headline"] if h.startswith("MLP-Attn"))
        assert line.count("digits") == 1 and "over 2 seeds" in line
