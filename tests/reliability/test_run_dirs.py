"""Damaged run directories: every reader names the file; `runs list` lists the rest; the TUI opens what it can."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from reliability_support import invoke, one_line_failure, tree


def _write(name: str, data: bytes | str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        p = run / name
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data)

    return damage


def _dir_csv(run: Path) -> None:
    (run / "train.csv").unlink()
    (run / "train.csv").mkdir()


def _csv_cell(col: str, value: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        lines = (run / "train.csv").read_text().splitlines()
        head = lines[0].split(",")
        row = lines[1].split(",")
        row[head.index(col)] = value
        (run / "train.csv").write_text("\n".join([lines[0], ",".join(row)]) + "\n")

    return damage


DAMAGE = {
    "summary not JSON": (_write("summary.json", "{not json"), "summary.json", "not valid JSON"),
    "summary a list": (_write("summary.json", "[1, 2]"), "summary.json", "JSON object expected"),
    "summary null": (_write("summary.json", "null"), "summary.json", "JSON object expected"),
    "summary section a list": (
        _write("summary.json", '{"train": [1]}'),
        "summary.json",
        "section 'train'",
    ),
    "summary headline a number": (
        _write("summary.json", '{"train": {"headline": 3}}'),
        "summary.json",
        "headline",
    ),
    "env a list": (_write("env.json", "[]"), "env.json", "JSON object expected"),
    "env status a number": (
        _write("env.json", '{"status": 3}'),
        "env.json",
        "status must be a string",
    ),
    "env binary": (_write("env.json", b"\xff\xfe\x00\x00"), "env.json", "not UTF-8"),
    "csv binary": (_write("train.csv", b"\x89PNG\x00\x00\xff"), "train.csv", "not UTF-8"),
    "csv nul bytes": (_write("train.csv", "model,width\x00\n"), "train.csv", "binary data"),
    "csv non-numeric": (_csv_cell("test_accuracy", "lots"), "train.csv", "not a number"),
    "csv NaN width": (_csv_cell("width", "nan"), "train.csv", "not an integer"),
    "csv missing column": (
        _write("train.csv", "model,dataset\nrelu,digits\n"),
        "train.csv",
        "missing column",
    ),
    "csv a directory": (_dir_csv, "train.csv", "not a regular file"),
    "spec wrong type": (_write("spec.toml", "device = 5\n"), "spec.toml", "invalid device=5"),
    "spec not TOML": (_write("spec.toml", "[[["), "spec.toml", "valid TOML"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_readers_name_the_damaged_file(run_copy: Path, sandbox: Path, case: str) -> None:
    damage, fname, what = DAMAGE[case]
    damage(run_copy)
    before = tree(sandbox)
    commands = [
        ["runs", "show", run_copy],
        ["export", run_copy, "--to", sandbox / "exp"],
        ["export", run_copy, "--format", "json", "--to", sandbox / "exp"],
        ["report", run_copy],
    ]
    for args in commands:
        line = one_line_failure(invoke(*args))
        assert "damaged run:" in line and fname in line and what in line, (args, line)
    assert tree(sandbox) == before  # no export folder, no report


def test_figures_of_a_damaged_run(run_copy: Path) -> None:
    pytest.importorskip("matplotlib")
    _csv_cell("width", "x")(run_copy)
    assert "damaged run:" in one_line_failure(invoke("figures", run_copy))
    assert not (run_copy / "figures").exists()


def test_runs_list_marks_damaged_and_lists_the_rest(good_run: Path, sandbox: Path) -> None:
    import shutil

    root = sandbox / "runs"
    for name in ("a-ok", "b-bad-summary", "c-bad-csv", "d-ok"):
        shutil.copytree(good_run, root / name)
    (root / "b-bad-summary" / "summary.json").write_text("[]")
    (root / "c-bad-csv" / "train.csv").write_bytes(b"\xff\xfe")
    res = invoke("runs", "list", "--root", root)
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    for name in ("a-ok", "b-bad-summary", "c-bad-csv", "d-ok"):
        assert name in res.output
    assert res.output.count("damaged") >= 2
    from engine.run.runs import list_runs

    rows = {r["name"]: r for r in list_runs(root)}
    assert rows["a-ok"]["status"] == "finished" and rows["b-bad-summary"]["status"] == "damaged"
    assert "summary.json" in rows["b-bad-summary"]["damage"]


def test_tui_opens_what_it_can(run_copy: Path) -> None:
    from malleability_tui.state import load_run_state

    (run_copy / "summary.json").write_text("null")
    (run_copy / "events.jsonl").write_bytes(b"\xff\x00garbage\n" * 3)
    st = load_run_state(run_copy)
    assert any("summary.json" in d for d in st.damage) and any(
        "events.jsonl" in d for d in st.damage
    )
    assert st.tables.get("train")  # the intact CSV is shown


def test_killed_run_reads_as_interrupted(run_copy: Path) -> None:
    from reliability_support import dead_pid

    from engine.run.runs import read_run

    env = json.loads((run_copy / "env.json").read_text())
    env["status"] = "running"  # as SIGKILL leaves it
    (run_copy / "env.json").write_text(json.dumps(env))
    import socket

    (run_copy / ".lock").write_text(json.dumps({"pid": dead_pid(), "host": socket.gethostname()}))
    assert read_run(run_copy)["env"]["status"] == "interrupted"
    from engine.run.runs import list_runs

    assert list_runs(run_copy.parent)[0]["status"] == "interrupted"
