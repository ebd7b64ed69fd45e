"""Pure helpers (no app): form ⇄ spec, series, flip rows, landscape grids, plots, state."""

from __future__ import annotations

import math

from tui_support import SPEC, canned_events, write_run

from engine.run.spec import RunSpec
from malleability_tui.format import eta
from malleability_tui.spec_form import form_to_spec, spec_to_form
from malleability_tui.state import RunState, load_run_state
from malleability_tui.views.flips import flip_rows, paper_flip
from malleability_tui.views.guards import guard_notes
from malleability_tui.views.landscape import landscape_curves, landscape_surfaces
from malleability_tui.views.spectra import spectrum_lines
from malleability_tui.views.sweep import sweep_series
from malleability_tui.views.training import cell_label


def test_form_roundtrip_and_errors():
    vals = spec_to_form(SPEC)
    spec, errors = form_to_spec(RunSpec(), vals)
    assert errors == {} and spec == SPEC
    vals.update(widths="4,x", seeds="1,1", eps="2", classes="3", lr="-1")
    spec, errors = form_to_spec(RunSpec(), vals)
    assert spec is None
    assert set(errors) == {"widths", "seeds", "eps", "classes", "lr"}
    assert "integers" in errors["widths"] and "(0, 1]" in errors["eps"]
    _, errors = form_to_spec(RunSpec(), {**spec_to_form(SPEC), "experiment": "bogus"})
    assert "experiment" in errors


def test_sweep_series_mean_std():
    rows = [
        {"model": "A", "width": "16", "seed": s, "ntk_distance": str(v)}
        for s, v in ((0, 1.0), (1, 3.0))
    ]
    rows.append({"model": "A", "width": 4, "seed": 0, "ntk_distance": 5.0})
    ws, mean, std, n = sweep_series(rows)["A"]
    assert ws == [4, 16] and mean == [5.0, 2.0] and n == [1, 2]
    assert math.isclose(std[1], math.sqrt(2)) and std[0] == 0.0


def test_flip_rows_ci_ratio_paper():
    rows = [
        {
            "model": m,
            "dataset": "mnist",
            "attack": "pgd",
            "eps": 0.3,
            "training": "standard",
            "seed": s,
            "flip_rate": fr + 0.02 * s,
            "spearman": 0.5,
            "n_selected": 100,
            "n_flipped": round(100 * (fr + 0.02 * s)),
        }
        for m, fr in (("2L-ReLU", 0.1), ("MLP-Attn", 0.4))
        for s in (0, 1)
    ]
    out = {r.model: r for r in flip_rows(rows)}
    relu, attn = out["2L-ReLU"], out["MLP-Attn"]
    assert math.isclose(relu.flip, 0.11) and math.isclose(attn.ratio, 0.41 / 0.11)
    # 22 flips of 200 pooled over the two seeds: Wilson 95% interval [0.0738, 0.1609]
    assert math.isclose(relu.lo, 0.07377, abs_tol=1e-4) and math.isclose(
        relu.hi, 0.16093, abs_tol=1e-4
    )
    assert relu.paper == 3.3 and attn.paper == 28.9  # docs/protocol.md#paper-numbers, MNIST PGD
    assert paper_flip("mnist:3v8", "MLP-Attn", "fgsm", "standard") == 25.9


def test_landscape_grid_and_curves():
    rows = [
        {"model": "A", "direction": "d", "alpha": a, "beta": "", "loss": a * a} for a in (1, -1, 0)
    ]
    rows += [
        {"model": "A", "direction": "2d", "alpha": a, "beta": b, "loss": 10 * b + a}
        for a in (0, 1)
        for b in (0, 1, 2)
    ]
    ((alpha, loss),) = landscape_curves(rows).values()
    assert alpha == [-1, 0, 1] and loss == [1, 0, 1]
    grid = landscape_surfaces(rows)["A"]
    assert grid == [[0, 1], [10, 11], [20, 21]]


def test_small_formatters():
    assert eta(10.0, 1, 5) == 40.0 and eta(10.0, 0, 5) is None
    lines = dict(spectrum_lines({"width_threshold_v1": 1e42}))
    assert "+30.0 orders" in lines["m ≥ κ(G)⁶ (v1)"]
    assert cell_label("train/digits/attn/64/0") == "MLP-Attn m=64 seed 0 (digits)"


def test_state_live_equals_reopened(tmp_path):
    live = RunState()
    for e in canned_events():
        live.apply(e)
    disk = load_run_state(write_run(tmp_path / "run"))
    assert disk.status == live.status == "finished"
    assert {k: len(v) for k, v in disk.tables.items()} == {
        k: len(v) for k, v in live.tables.items()
    }
    assert disk.artifact("eigenvalues")["eig_G"] == live.artifact("eigenvalues")["eig_G"]
    assert disk.live_cell() == live.live_cell() == "ntk/digits/attn/256/1"
    assert live.headlines()[0].startswith("ntk: MLP-Attn")


def test_guard_notes_from_live_and_csv_rows():
    """The same note for live rows (bools) and rows read back from CSV (text); nothing for
    rows that pass or lack the columns (older runs)."""
    live = [
        {"model": "MLP-Attn", "width": 16, "seed": 0, "converged": False, "above_chance": False},
        {"model": "MLP-Attn", "width": 64, "seed": 0, "converged": True, "above_chance": False},
        {"model": "2L-ReLU", "width": 16, "seed": 0, "converged": True, "above_chance": True},
    ]
    disk = [{k: str(v) for k, v in r.items()} for r in live]
    notes = guard_notes(live)
    assert notes == guard_notes(disk) and len(notes) == 1
    assert (
        "MLP-Attn: not converged in 1 of 2 cells (m=16 seed=0); at chance in 2 of 2 cells"
        in notes[0]
    )
    assert notes[0].startswith("[yellow]⚠") and "their numbers are not results" in notes[0]
    assert guard_notes([{"model": "2L-ReLU", "width": 16}]) == []


def test_run_fraction_weights_experiments_by_planned_work():
    """The ETA's fraction counts each experiment by its planned time (the estimate's
    model), not equally: a finished cheap spectrum is a sliver of a run with flips."""
    from engine.experiments.estimate import planned_shares
    from engine.run.events import Progress, Started

    spec = RunSpec(experiment="spectrum,flip").replace(
        data__n_train=100, data__n_test=20, flip__width=64
    )
    st = RunState()
    st.apply(Started("spectrum,flip", spec.to_dict()))
    assert st.run_fraction() is None
    st.apply(Progress("experiments", 0, 2, "spectrum"))
    assert st.run_fraction() == 0.0
    st.apply(Progress("experiments", 1, 2, "flip"))
    share = planned_shares(spec)
    assert math.isclose(sum(share.values()), 1.0)
    want = (share["spectrum"] + 0.02) / 1.04
    assert math.isclose(st.run_fraction(), want, rel_tol=1e-12)
    assert want < 0.2  # not the 0.5 of equal shares
    st.apply(Progress("sweep", 1, 2, ""))  # half of flip's cells done
    assert math.isclose(st.run_fraction(), want + (1 - want) / 2, rel_tol=1e-12)
    st.apply(Progress("experiments", 2, 2, "done"))
    assert st.run_fraction() == 1.0
    # a spec the estimate cannot read: equal shares
    odd = RunState()
    odd.apply(Started("x", {"data": {"name": "no-such-set"}}))
    odd.apply(Progress("experiments", 1, 2, "b"))
    assert odd.run_fraction() == 0.5
