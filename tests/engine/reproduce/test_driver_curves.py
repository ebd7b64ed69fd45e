"""The reproduction's loop reads the parts' epoch curves (events.jsonl, every epoch of
every cell) only for ``--verify``, the one reader of them (engine/reproduce/verify.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import engine.run.runs as runs
from engine.reproduce import driver, record
from engine.reproduce.plan import plan


@pytest.mark.parametrize("verify", [False, True])
def test_curves_are_read_only_to_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verify: bool
) -> None:
    parts = plan(("digits",), tables=(6,), quick=True)
    read: list[Path] = []
    monkeypatch.setattr(driver, "available", lambda part: None)
    monkeypatch.setattr(runs, "read_run", lambda p: {"tables": {}})
    monkeypatch.setattr(runs, "train_curves", lambda p: read.append(Path(p)) or {})
    monkeypatch.setattr(record, "finish", lambda *a: {"checklist": []})
    checked: list[Any] = []
    if verify:
        import engine.reproduce.verify as v

        monkeypatch.setattr(v, "verify", lambda *a: checked.append(a[-1]) or {})
        monkeypatch.setattr(record, "add_verify", lambda *a: None)
    driver.reproduce_parts(
        tmp_path,
        parts,
        run_part=lambda part, sub, again: None,
        on_missing=lambda part, why: None,
        resume=False,
        datasets=["digits"],
        tables=[6],
        quick=True,
        estimated_seconds=1.0,
        verify=verify,
    )
    assert len(read) == (len(parts) if verify else 0)
    if verify:  # the curves reach the check, one entry a part
        assert checked and set(checked[0]) == {p.key for p in parts}
