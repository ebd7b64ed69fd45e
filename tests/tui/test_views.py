"""Pure view models: the Sweep panel's leading column, the Spectra panel's cut at the rank."""

from __future__ import annotations

from malleability_tui.views.spectra import spectra_view, spectrum_lines, spectrum_rank
from malleability_tui.views.sweep import COLUMNS, next_column, sweep_column


def test_sweep_leads_with_the_distance_to_the_linearization() -> None:
    new = [{"model": "2L-ReLU", "width": 8, "ntk_distance": 1.0, "lin_distance_rel": 0.5}]
    old = [{"model": "2L-ReLU", "width": 8, "ntk_distance": 1.0, "lin_distance_rel": ""}]
    assert sweep_column(new) == "lin_distance_rel"
    assert sweep_column(old) == "ntk_distance"  # a run from before the linearized twin
    assert sweep_column(new, "kernel_drift") == "kernel_drift"  # the user's choice stays
    seen = [COLUMNS[0]]
    for _ in COLUMNS[1:]:
        seen.append(next_column(seen[-1]))
    assert sorted(seen) == sorted(COLUMNS) and next_column(seen[-1]) == COLUMNS[0]


def test_spectra_cut_g3_at_the_numerical_rank() -> None:
    g = [1.0, 0.1, 0.01, 1e-17, 1e-18]
    g3 = [x**3 for x in g]
    rows = [{"dataset": "digits", "rank": "3"}]
    v = spectra_view(g, g3, spectrum_rank(rows, "digits"))
    assert v.eig_g == g and v.eig_g3 == g3[:3] and v.rank == 3 and v.idx == [1, 2, 3, 4, 5]
    assert spectra_view(g, g3, spectrum_rank([], "digits")).eig_g3 == g3  # rank unknown


def test_thresholds_name_the_kappa_they_use() -> None:
    finite = dict(spectrum_lines({"dataset": "x", "kappa_d": 10.0, "width_threshold_v2": 1e9}))
    inf = dict(spectrum_lines({"dataset": "x", "kappa_d": "inf", "width_threshold_v2": 1e9}))
    assert "m ≥ κ_d⁶ n ln n (v2)" in finite and "m ≥ κ(G)⁶ n ln n (v2)" in inf
    assert "m ≥ κ(G)⁶ (v1)" in finite
