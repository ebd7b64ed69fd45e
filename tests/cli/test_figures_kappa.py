"""``malleability figures`` draws the kappa_sweep figure (effects against κ(G), log x),
with a point that failed a guard marked, not drawn as a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.results.tables import KappaSweepRow


def test_a_kappa_sweep_table_gives_its_figure(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from malleability_tui.cli.figure_kappa import draw_kappa
    from malleability_tui.cli.figures import make_figures

    nan = float("nan")
    rows = [
        KappaSweepRow(
            alpha=a,
            model=m,
            kappa_G=k,
            lin_slope=s if ok else nan,
            lin_slope_low=s - 0.01,
            lin_slope_high=s + 0.01,
            flip_rate=0.3 if ok else nan,
            flip_low=0.2,
            flip_high=0.4,
            flip_ratio=2.0 if ok else nan,
            slope_ok=ok,
            flip_ok=ok,
        ).to_row()
        for a, k, ok in ((0.0, 2.6e5, False), (0.5, 6.8e4, True), (1.0, 2.9e4, True))
        for m, s in (("2L-ReLU", -0.05), ("MLP-Attn", 0.1))
    ]
    fig = draw_kappa(plt, rows, "t")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "κ(G)"
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["a model failed a guard", "2L-ReLU", "MLP-Attn"]
    plt.close(fig)
    files, missing = make_figures(
        [("t", {"tables": {"kappa_sweep": rows}, "spec": {}})], tmp_path, "png"
    )
    assert [f.name for f in files] == ["t_kappa_sweep.png"] and files[0].stat().st_size > 0
    assert not any(m.startswith("kappa_sweep") for m in missing)
