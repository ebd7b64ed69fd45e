"""The Flips panel's protocol filter and sensitivity-grid cells (pure helpers)."""

from __future__ import annotations

from malleability_tui.widgets.flips_panel import default_protocol_rows, grid_cells


def _rows():
    out = []
    for ridge, ranking, a, r in (
        ("objective:0.5", "abs_signed_mean", 6, 2),
        ("lambda:0.001", "abs_mean", 3, 5),
    ):
        for model, k in (("MLP-Attn", a), ("2L-ReLU", r)):
            out.append(
                {
                    "model": model,
                    "dataset": "mnist:3v8",
                    "attack": "pgd",
                    "eps": 0.3,
                    "training": "standard",
                    "seed": 0,
                    "flip_rate": k / 10,
                    "n_selected": 10,
                    "n_flipped": k,
                    "ridge": ridge,
                    "ranking": ranking,
                }
            )
    return out


def test_default_protocol_and_grid():
    rows = _rows()
    spec = {"flip": {"ridge": "objective", "ranking": "abs_signed_mean"}}
    assert {r["ridge"] for r in default_protocol_rows(rows, spec)} == {"objective:0.5"}
    assert (
        len(default_protocol_rows(rows, {"flip": {"ridge": "lambda", "ranking": "abs_mean"}})) == 2
    )
    cells = grid_cells(rows)
    assert cells == [
        ("objective:0.5", "abs_signed_mean", "PGD", "0.3", "60.0%", "20.0%", "×3.00"),
        ("lambda:0.001", "abs_mean", "PGD", "0.3", "30.0%", "50.0%", "×0.60"),
    ]
    assert grid_cells(rows[:2]) == []  # one protocol: no grid
