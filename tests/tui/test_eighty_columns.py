"""80×24: every panel with a finished run open and during a run shows its names, numbers
and legends whole (no cut, no wrap inside a value), driven through Textual's pilot at
the terminal size users have (docs/guide.md)."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult
from tui_support import screen_text

from engine.run.events import Progress
from malleability_tui.state import RunState
from malleability_tui.text import duration
from malleability_tui.widgets.status_bar import StatusBar

LONG_NAME = "20261206-014501-advtrain-train-digits"


class _Bar(App):
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")


def _bar_line(state: RunState, elapsed: float) -> str:
    async def go() -> str:
        app = _Bar()
        async with app.run_test(size=(80, 3)) as pilot:
            app.query_one(StatusBar).show(state, elapsed)
            await pilot.pause()
            return screen_text(app).splitlines()[0]

    return asyncio.run(go())


def _running_state() -> RunState:
    st = RunState(run_dir=f"/runs/{LONG_NAME}", status="running")
    st.env = {"device": "cpu"}
    for ev in (
        Progress("experiments", 1, 4, "advtrain"),
        Progress("sweep", 3, 12, ""),
        Progress("cell", 440, 900, "", cell="train/relu/m=256/seed=1"),
    ):
        st.apply(ev)
    return st


def test_status_bar_keeps_the_eta_whole_and_shortens_the_run_name_before_it():
    """A run's whole line at 80 columns: the ETA's value whole, the counters whole, the run
    name shortened (its time stamp dropped, then cut with …), never the ETA."""
    st = _running_state()
    f = st.run_fraction()
    assert f is not None and 0 < f < 1
    eta = duration(4000.0 * (1 - f) / f)
    line = _bar_line(st, 4000.0)
    assert len(line) <= 80
    assert f"ETA {eta}" in line, line
    assert "cell 3/12 · epoch 440/900" in line, line
    assert LONG_NAME not in line  # it cannot fit whole beside all that
    # with fewer counters the name comes back, without its time stamp
    st.progress.pop("cell")
    st.progress.pop("sweep")
    line = _bar_line(st, 4000.0)
    assert "ETA" in line and line.rstrip().endswith("  advtrain-train-digits"), line


def test_status_bar_shows_a_short_line_whole():
    st = RunState(run_dir=f"/runs/{LONG_NAME}", status="finished")
    line = _bar_line(st, 12.0)
    assert line.strip().endswith(LONG_NAME), line


def test_fit_name_drops_the_stamp_then_cuts():
    from malleability_tui.widgets.status_bar import fit_name

    assert fit_name(LONG_NAME, 80) == LONG_NAME
    assert fit_name(LONG_NAME, 25) == "advtrain-train-digits"
    assert fit_name(LONG_NAME, 10) == "advtrain-…"
    assert fit_name(LONG_NAME, 5) == ""


def _panels_text(tmp_path, tabs: tuple[str, ...]) -> dict[str, str]:
    """The screen at 80×24 on each of ``tabs`` with the canned finished run open."""
    from tui_support import make_test_app, write_run

    run = write_run(tmp_path / "runs" / LONG_NAME.replace("advtrain-train", "all"))

    async def go() -> dict[str, str]:
        app = make_test_app(tmp_path, open_run=str(run))
        out = {}
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            for tab in tabs:
                app.action_show_tab(tab)
                await pilot.pause(0.2)
                out[tab] = screen_text(app)
        return out

    return asyncio.run(go())


def test_legends_name_every_series_whole(tmp_path):
    """The Landscape legend cut "● MLP-Attn …" at 80 columns: a series that does not fit
    the title's line goes on the next line, whole; the Spectra legend keeps λ(G³)."""
    from malleability_tui.plots import Series, line_chart

    text = _panels_text(tmp_path, ("landscape", "spectra"))
    for name in ("● 2L-ReLU random", "● MLP-Attn random"):
        assert name in text["landscape"], text["landscape"]
    assert "● λ(G)" in text["spectra"] and "● λ(G³)" in text["spectra"]
    names = ["2L-ReLU 1d", "2L-ReLU interp", "MLP-Attn 1d", "MLP-Attn interp"]
    chart = line_chart(
        [Series(n, [0.0, 1.0], [1.0, 2.0 + i]) for i, n in enumerate(names)],
        40,
        18,
        title="1-D loss",
    ).plain.splitlines()
    assert len(chart) == 18 and all(len(line) <= 40 for line in chart)
    legend = " ".join(chart[:3])
    assert all(f"● {n}" in legend for n in names), chart[:3]


def test_spectra_values_are_not_wrapped(tmp_path):
    """The figures beside the spectra: a value that does not fit beside its label goes
    under it, whole ("100 × 64, rank 40" on one line, not "100 × 64," and "rank 40")."""
    from malleability_tui.views.spectra import stat_block

    text = _panels_text(tmp_path, ("spectra",))["spectra"]
    assert "100 × 64, rank 40" in text, text
    assert "1.00e+42" in text and "+30.0 orders" in text
    lines = [("n × d, rank", "300 × 64, rank 59"), ("κ(G)³", "3.17e+17")]
    lines.append(("m ≥ κ(G)⁶ n ln n (v2)", "1.72e+38  +26.2 orders   paper ≫ 1e+40"))
    block = stat_block(lines, 27)
    assert "[b]κ(G)³[/b]  3.17e+17" in block
    assert block[-3:] == ["  1.72e+38", "  +26.2 orders", "  paper ≫ 1e+40"]


def test_flips_table_keeps_its_seeds_column_at_80_columns(tmp_path):
    """The flip table's ten columns did not fit 80 columns: once rows came, the last one
    (seeds) was scrolled off. The data set (the same in every row) and the paper's value
    (none for digits) are said in the note instead, the training is std/adv: every column
    left, seeds included, is on screen whole."""
    text = _panels_text(tmp_path, ("flips",))["flips"]
    lines = text.splitlines()
    (head,) = [ln for ln in lines if "flip % [95% CI]" in ln]
    want = ["model", "attack", "ε", "train", "flip", "%", "[95%", "CI]", "ρ", "÷ReLU", "seeds"]
    assert head.split() == want, head
    rows = [ln for ln in lines if ln.startswith((" 2L-ReLU", " MLP-Attn"))]
    assert len(rows) == 8 and all(ln.split()[-1] == "2" for ln in rows), rows
    assert "data set digits" in " ".join(text.split())


def test_flip_columns_fit_80_with_a_paper_value_and_keep_what_differs():
    """With the paper's value (mnist) the kept columns still fit 78 columns (80 less the
    table's scroll bar); two data sets keep the data column."""
    import dataclasses

    from malleability_tui.views.flips import FLIP_HEADERS, FlipRow, flip_columns

    row = FlipRow(
        "mnist", "MLP-Attn", "pgd", 0.3, "adversarial", 1.0, 0.55, 3, 0.714, 43.4, 0.952, 1.0
    )
    rows = [row, dataclasses.replace(row, model="2L-ReLU", paper=3.3)]
    keep, note = flip_columns(rows)
    assert [FLIP_HEADERS[i] for i in keep][-2:] == ["paper", "seeds"] and note == "data set mnist"
    width = sum(2 + max(len(FLIP_HEADERS[i]), *(len(r.cells()[i]) for r in rows)) for i in keep)
    assert width <= 78, width
    keep, note = flip_columns([row, dataclasses.replace(row, dataset="cifar10")])
    assert FLIP_HEADERS[keep[0]] == "data" and note == ""


def test_runs_names_keep_their_end_and_the_title_breaks_at_hyphens(tmp_path):
    """The runs table cut names to their time stamp ("-train-digits" lost) and the detail
    title wrapped inside a word: names show whole (or with the stamp cut, the end kept),
    the title breaks after a hyphen."""
    from tui_support import make_test_app, write_run

    from malleability_tui.widgets.runs_browser import name_lines, short_name

    long = "20261206-014501-spectrum+landscape+ntk-digits"
    write_run(tmp_path / "runs" / "20261203-193300-train-digits")
    write_run(tmp_path / "runs" / long)

    async def go() -> str:
        app = make_test_app(tmp_path)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("7")
            await pilot.pause(0.2)
            return screen_text(app)

    text = asyncio.run(go())
    assert "20261203-193300-train-digits" in text
    assert short_name(long, 30) in text and short_name(long, 30).endswith("ntk-digits")
    title = [ln.split("│", 1)[1].strip() for ln in text.splitlines()[2:5]]
    assert title == ["20261206-014501-", "spectrum+landscape+ntk-", "digits"], title
    assert name_lines("tui-run", 21) == ["tui-run"]
    assert "".join(name_lines(long, 10)) == long


def test_a_long_epochs_steps_move_the_status_line():
    """During a long adversarial epoch the line moved nowhere ("epoch 440/900" for
    minutes): the engine's ``Progress('batch')`` shows as "(step k/n)" beside the epoch,
    whole at 80 columns, and goes when the epoch ends."""
    st = _running_state()
    st.apply(Progress("batch", 3, 8, "relu m=256 seed=1", cell="train/relu/m=256/seed=1"))
    line = _bar_line(st, 600.0)
    assert "epoch 440/900 (step 3/8)" in line and "ETA" in line, line
    st.apply(Progress("batch", 4, 8, "relu m=256 seed=1", cell="train/relu/m=256/seed=1"))
    assert "(step 4/8)" in _bar_line(st, 602.0)
    st.apply(Progress("cell", 441, 900, "", cell="train/relu/m=256/seed=1"))
    line = _bar_line(st, 604.0)
    assert "epoch 441/900" in line and "step" not in line.split("epoch")[-1], line


def test_sweep_note_keeps_each_models_value_beside_its_name(tmp_path):
    """The sweep's note wrapped between "MLP-Attn:" and its value at 80 columns: when both
    models' notes do not fit one line, each has a line of its own."""
    text = _panels_text(tmp_path, ("sweep",))["sweep"]
    lines = text.splitlines()
    for model in ("2L-ReLU", "MLP-Attn"):
        (line,) = [ln for ln in lines if f"{model}: m=256" in ln]
        assert "(2 seeds)" in line.split(f"{model}: m=256", 1)[1], line


def test_no_panel_cuts_a_name_or_a_value_at_80x24(tmp_path):
    """Every tab at 80×24, with the canned finished run open and during a run (paused
    half-way): nothing is cut with … (legends, tables, names, the status line)."""
    from tui_support import canned_events, make_test_app, wait_job

    from malleability_tui.actions import TABS
    from malleability_tui.runner import ReplayRunner

    tabs = [t for t in TABS if t != "setup"]
    finished = _panels_text(tmp_path / "done", tuple(tabs))
    events = canned_events()
    runner = ReplayRunner(events, pause_after=len(events) // 2)

    async def during() -> dict[str, str]:
        app = make_test_app(tmp_path / "live", runner)
        out = {}
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("ctrl+r")
            for _ in range(100):
                await pilot.pause(0.05)
                if runner.paused.is_set():
                    break
            await pilot.pause(0.2)
            for tab in tabs:
                app.action_show_tab(tab)
                await pilot.pause(0.2)
                out[tab] = screen_text(app)
            app.cancel_jobs()
            await wait_job(pilot, app)
        return out

    live = asyncio.run(during())
    assert runner.paused.is_set()
    for when, screens in (("finished", finished), ("running", live)):
        for tab, text in screens.items():
            # the paper's own "much greater than …", and an empty plot's placeholder: paused
            # between a cell's train_loss and train_accuracy events, one plot has a point
            # and the other still waits (its "…" says waiting, not cut)
            cut = text.replace("(m ≫ …)", "").replace("waiting for a training cell…", "")
            assert "…" not in cut, f"{when} {tab}:\n{text}"
            assert all(len(ln) <= 80 for ln in text.splitlines())
