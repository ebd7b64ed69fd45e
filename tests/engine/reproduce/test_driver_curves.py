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


def test_an_interrupted_sitting_records_its_end_and_the_resume_counts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sitting stopped by Ctrl-C or SIGTERM writes its end time and wall time into
    reproduce.json before the interrupt goes on; the resumed sitting keeps it in
    ``sittings`` and the published wall time adds it (it was lost before)."""
    import json
    import time

    from engine.reproduce.publish import wall_seconds

    parts = plan(("digits",), tables=(6,), quick=True)
    monkeypatch.setattr(driver, "available", lambda part: None)
    monkeypatch.setattr(runs, "read_run", lambda p: {"tables": {}})
    monkeypatch.setattr(record, "compare", lambda *a: {"checklist": []})

    def stop_at_second(part: Any, sub: Path, again: bool) -> None:
        time.sleep(0.05)
        if part is parts[-1]:
            raise KeyboardInterrupt

    kwargs: dict[str, Any] = dict(
        on_missing=lambda part, why: None,
        datasets=["digits"],
        tables=[6],
        quick=True,
        estimated_seconds=1.0,
    )
    with pytest.raises(KeyboardInterrupt):
        driver.reproduce_parts(tmp_path, parts, run_part=stop_at_second, resume=False, **kwargs)
    first = json.loads((tmp_path / record.META).read_text())
    assert first["interrupted"] is True and first["end_time"]
    assert first["seconds"] >= 0.05 * len(parts)
    assert not (tmp_path / record.SUMMARY).exists()

    meta, _ = driver.reproduce_parts(
        tmp_path, parts, run_part=lambda part, sub, again: None, resume=True, **kwargs
    )
    done = json.loads((tmp_path / record.META).read_text())
    assert "interrupted" not in done
    assert [s["seconds"] for s in done["sittings"]] == [first["seconds"]]
    assert done["sittings"][0]["interrupted"] is True
    assert wall_seconds(done) == pytest.approx(first["seconds"] + done["seconds"])


def test_the_continuation_check_moves_the_sittings_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sitting's end time and load are those after ``--verify``'s check, not those of
    the parts before it (the results page prints the sitting as start to end)."""
    import json

    parts = plan(("digits",), tables=(6,), quick=True)
    clock = iter(["t0", "t1", "t2"])
    monkeypatch.setattr(record, "_now", lambda: next(clock))
    monkeypatch.setattr(record, "compare", lambda *a: {"checklist": []})
    meta = record.start(
        tmp_path, parts, datasets=["digits"], tables=[6], quick=True, estimated_seconds=1.0
    )
    comparison = record.finish(tmp_path, meta, {}, parts, 5.0)
    assert json.loads((tmp_path / record.META).read_text())["end_time"] == "t1"
    record.add_verify(tmp_path, meta, comparison, {"seconds": 7.0})
    done = json.loads((tmp_path / record.META).read_text())
    assert (done["start_time"], done["end_time"], done["seconds"]) == ("t0", "t2", 5.0)
