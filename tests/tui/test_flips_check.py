"""The Flips panel's influence-check table: the engine's summary, best first, from CSV rows."""

from __future__ import annotations

from malleability_tui.widgets.flips_panel import check_cells


def test_check_cells_rank_estimators_and_mark_the_closest():
    base = {"model": "2L-ReLU", "n_points": "40", "seconds": "0.1", "seed": "0"}
    rows = [  # as read back from influence_check.csv: strings
        {
            **base,
            "estimator": "kernel_loo",
            "ridge": "lambda:0.001",
            "spearman": "0.2",
            "spearman_p": "0.2",
            "sign_agreement": "0.6",
        },
        {
            **base,
            "estimator": "kernel_loo",
            "ridge": "objective:0.1",
            "spearman": "0.8",
            "spearman_p": "1e-6",
            "sign_agreement": "0.9",
        },
        {
            **base,
            "estimator": "retrain_other_order",
            "ridge": "",
            "spearman": "0.97",
            "spearman_p": "1e-9",
            "sign_agreement": "1.0",
        },
    ]
    cells, lines = check_cells(rows, "mnist")
    assert [c[1] for c in cells] == [
        "kernel LOO ★",
        "kernel LOO",
        "retraining, another batch order",
    ]
    assert cells[0][2] == "objective:0.1" and cells[0][3] == "0.80" and cells[0][4] == "90%"
    assert cells[2][2] == "–"
    assert lines and "closest to retraining: kernel LOO objective:0.1" in lines[0]
    assert check_cells([], "mnist") == ([], [])
