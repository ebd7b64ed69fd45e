"""The Claims panel: `malleability-tui REPRODUCTION` opens on the checklist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tui_support import make_test_app

from malleability_tui.widgets.claims_panel import EMPTY, claims_text

GOLDEN = Path(__file__).resolve().parents[1] / "cli" / "golden" / "reproduce_summary.json"


def _reproduction(tmp_path: Path) -> Path:
    d = tmp_path / "20261203-193500-reproduce"
    d.mkdir()
    (d / "reproduce.json").write_text(json.dumps({"parts": []}))
    shutil.copy(GOLDEN, d / "summary.json")
    return d


def test_claims_text_is_the_cli_checklist() -> None:
    summary = json.loads(GOLDEN.read_text())
    text = claims_text(summary).plain
    assert "? 1 digits  inconclusive*  NTK non-convergence (Adam, 10-class)" in text
    assert "✓ 2 digits  holds          κ(G³) = κ(G)³" in text
    assert claims_text({}).plain == EMPTY


async def test_a_reproduction_opens_on_the_claims_panel(tmp_path: Path) -> None:
    app = make_test_app(tmp_path, open_run=str(_reproduction(tmp_path)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "claims"
        shown = str(app.query_one("#claims-text").render())
        assert "NTK non-convergence" in shown and "dual implication" in shown
