"""``malleability figures`` draws the trainability plot from a run's trainability rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.results.tables import TrainabilityRow


def test_a_trainability_table_gives_its_figure(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from malleability_tui.cli.figures import make_figures

    rows = [
        TrainabilityRow("synthetic-gram", k, k**3, m, 0, int(s), c, 0.01).to_row()
        for m, f in (("2L-ReLU", 1.0), ("MLP-Attn", 3.0))
        for k, s, c in ((10.0, 10 * f, False), (100.0, 100 * f, False), (1e3, 500.0, True))
    ]
    run = {"tables": {"trainability": rows}, "spec": {}}
    files, missing = make_figures([("t", run)], tmp_path, "png")
    assert [f.name for f in files] == ["t_trainability.png"] and files[0].stat().st_size > 0
    assert not any(m.startswith("trainability") for m in missing)
