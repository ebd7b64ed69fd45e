"""End to end: a real tiny job through the real (subprocess) runner fills the sweep panel."""

from __future__ import annotations

import json

from tui_support import make_test_app, run_dirs

from engine.experiments.registry import experiments
from engine.run.spec import RunSpec
from malleability_tui.runner import SubprocessRunner
from malleability_tui.widgets.plot_view import PlotView


async def test_real_tiny_job(tmp_path):
    exp = "ntk" if "ntk" in experiments() else "train"
    spec = RunSpec(experiment=exp, seeds=(0,), device="cpu").replace(
        data__name="digits",
        data__n_train=60,
        data__n_test=20,
        model__widths=(4, 8),
        train__epochs=3,
        ntk__drift_every=1,
        ntk__drift_points=16,
    )
    app = make_test_app(tmp_path, SubprocessRunner(), spec=spec)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+r")
        for _ in range(1200):
            await pilot.pause(0.1)
            if not app.runner.running and app.state.status != "running":
                break
        await pilot.pause(0.2)
        assert app.state.status == "finished", app.state.error
        (run,) = run_dirs(tmp_path)
        assert json.loads((run / "env.json").read_text())["status"] == "finished"
        table = "ntk_distance" if exp == "ntk" else "train"
        assert len((run / f"{table}.csv").read_text().splitlines()) == 1 + 2 * 2
        assert app.state.metrics  # live train_loss etc. arrived
        await pilot.press("2")
        await pilot.pause()
        fig = app.query_one("#sweep-plot", PlotView).figure
        assert sorted(s.label for s in fig.series) == ["2L-ReLU", "MLP-Attn"]
        assert all(list(s.x) == [4, 8] for s in fig.series)
