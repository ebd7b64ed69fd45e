"""The Claims panel: `malleability-tui REPRODUCTION` opens on the checklist, a row per claim
and data set; `enter` on a claim shows the panel and the sub-run behind it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tui_support import make_test_app

from engine.reproduce.claims import NO_DATA, NOT_RUN
from malleability_tui.views.claims import checklist_lines, checklist_rows, claim_target
from malleability_tui.widgets.claims_panel import EMPTY, details_text

GOLDEN = Path(__file__).resolve().parents[1] / "cli" / "golden" / "reproduce_summary.json"
NTK_RUN = GOLDEN.parent / "runs" / "20261203-193100-ntk-digits"
PARTS = [
    {
        "key": "digits-multiclass",
        "dataset": "digits",
        "task": "multiclass",
        "role": "main",
        "spec": {"experiment": "spectrum,landscape,ntk,flip,advtrain"},
    },
    {
        "key": "digits-binary",
        "dataset": "digits",
        "task": "binary",
        "role": "main",
        "spec": {"experiment": "spectrum,flip"},
    },
    {
        "key": "digits-binary-gd",
        "dataset": "digits",
        "task": "binary",
        "role": "gd",
        "spec": {"experiment": "ntk"},
    },
]


def _reproduction(tmp_path: Path, parts: list[dict] | None = None) -> Path:
    d = tmp_path / "20261203-193500-reproduce"
    d.mkdir()
    (d / "reproduce.json").write_text(json.dumps({"parts": parts or []}))
    shutil.copy(GOLDEN, d / "summary.json")
    return d


def test_checklist_rows_are_the_cli_checklist() -> None:
    summary = json.loads(GOLDEN.read_text())
    rows = checklist_rows(summary)
    assert len(rows) == len(summary["checklist"])
    assert rows[0] == ("?", "1", "digits", "inconclusive*", "NTK non-convergence (Adam, 10-class)")
    assert rows[2] == ("✓", "2", "digits", "holds", "κ(G³) = κ(G)³")
    assert "1 digits: non-convergence" in details_text(summary).plain
    assert details_text({}).plain == EMPTY


def test_a_part_not_run_yet_reads_not_run_yet() -> None:
    """The live checklist: a claim whose part is still to run says "not run yet" in the
    table's verdict column and the CLI's line alike (one helper), not a bare "no data"."""
    summary = json.loads(GOLDEN.read_text())
    for c in summary["checklist"]:
        if c.get("sweep") == "full-batch GD, binary":
            c["verdict"] = f"{NO_DATA}: {NOT_RUN}"
    (row,) = [r for r in checklist_rows(summary) if "GD" in r[4]]
    assert row[:1] + row[3:4] == ("·", NOT_RUN)
    (line,) = [line for line in checklist_lines(summary) if "GD" in line]
    assert line.startswith("· 1 digits") and f" {NOT_RUN} " in line


def test_claim_target_picks_the_panel_and_the_sub_run() -> None:
    summary = json.loads(GOLDEN.read_text())
    by = {(c["claim"], c.get("sweep")): c for c in summary["checklist"]}
    assert claim_target(by[1, "Adam, 10-class"], PARTS) == ("sweep", "digits-multiclass")
    assert claim_target(by[1, "full-batch GD, binary"], PARTS) == ("sweep", "digits-binary-gd")
    assert claim_target(by[2, None], PARTS) == ("spectra", "digits-multiclass")
    assert claim_target(by[3, None], PARTS) == ("flips", "digits-multiclass")
    assert claim_target(by[4, None], PARTS) == ("flips", "digits-multiclass")
    assert claim_target(by[5, None], PARTS) == ("spectra", "digits-multiclass")
    assert claim_target(by[6, None], PARTS) == ("landscape", "digits-multiclass")
    assert claim_target(by[2, None], PARTS[1:2]) == ("spectra", "digits-binary")
    assert claim_target(by[6, None], PARTS[1:]) == ("landscape", None)
    assert claim_target({**by[2, None], "dataset": "mnist"}, PARTS) == ("spectra", None)


async def test_a_reproduction_opens_on_the_claims_panel(tmp_path: Path) -> None:
    app = make_test_app(tmp_path, open_run=str(_reproduction(tmp_path)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "claims"
        table = app.query_one("#claims-table")
        summary = json.loads(GOLDEN.read_text())
        assert table.row_count == len(summary["checklist"])
        # every verdict, as the CLI's checklist gives it
        shown = [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]
        assert shown == checklist_rows(summary)
        assert app.focused is table
        names = [str(table.get_row_at(i)[4]) for i in range(table.row_count)]
        assert "NTK non-convergence (Adam, 10-class)" in names and "dual implication" in names
        assert "non-convergence" in str(app.query_one("#claims-text").render())


async def test_enter_on_a_claim_opens_its_sub_run_on_its_panel(tmp_path: Path) -> None:
    rep = _reproduction(tmp_path, PARTS)
    shutil.copytree(NTK_RUN, rep / "digits-multiclass")
    app = make_test_app(tmp_path, open_run=str(rep))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # row 0: claim 1, Adam, 10-class
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "sweep"
        assert Path(app.state.run_dir) == rep / "digits-multiclass"
        assert app.state.tables.get("ntk_distance")
        await pilot.press("8")  # back to the claims: the checklist is still there
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "claims"
        table = app.query_one("#claims-table")
        assert table.row_count == len(json.loads(GOLDEN.read_text())["checklist"])
        await pilot.press("down", "enter")  # claim 1 under GD: its sub-run is absent
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "claims"
        assert Path(app.state.run_dir) == rep / "digits-multiclass"


async def test_claims_without_a_reproduction_says_how_to_open_one(tmp_path: Path) -> None:
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("8")
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "claims"
        assert not app.query_one("#claims-table").display
        assert str(app.query_one("#claims-text").render()) == EMPTY
        await pilot.press("2")  # the panel keys still work from there
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "sweep"


async def test_a_reproduction_opens_with_its_first_part_on_the_other_panels(
    tmp_path: Path,
) -> None:
    """`malleability-tui REPRODUCTION` lands on Claims, and Sweep (and the other run
    panels) show the reproduction's first part that ran, not "no sweep rows yet"."""
    from tui_support import screen_text

    rep = _reproduction(tmp_path, PARTS)
    shutil.copytree(NTK_RUN, rep / "digits-multiclass")
    app = make_test_app(tmp_path, open_run=str(rep))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "claims"
        table = app.query_one("#claims-table")
        assert table.row_count == len(json.loads(GOLDEN.read_text())["checklist"])
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "no sweep rows yet" not in text
        assert Path(app.state.run_dir) == rep / "digits-multiclass"
        assert app.state.tables.get("ntk_distance")
        await pilot.press("8", "enter")  # a claim still opens its part
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "sweep"
