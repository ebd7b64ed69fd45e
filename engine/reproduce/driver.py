"""The reproduction's loop: write the plan, run each part that has its data, read the
parts back, compare and write the summary. The front ends (``malleability reproduce``,
the TUI) call ``reproduce_parts`` with how to run one part and how to report a part
without data; they never write a reproduction's files themselves."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.reproduce import record
from engine.reproduce.plan import Part


def available(part: Part) -> str | None:
    """None when the part's data set loads here, else the reason (one line)."""
    from engine.data import load_dataset
    from engine.errors import DatasetError

    d = part.spec.data
    try:
        load_dataset(
            d.name,
            root=d.data_dir,
            classes=d.classes,
            n_train=d.n_train,
            n_test=d.n_test,
            seed=part.spec.seeds[0],
            source=d.source_options(),
        )
    except DatasetError as e:
        return str(e)
    return None


def reproduce_parts(
    path: Path,
    parts: list[Part],
    *,
    run_part: Callable[[Part, Path, bool], None],
    on_missing: Callable[[Part, str], None],
    resume: bool,
    datasets: list[str],
    tables: list[int],
    quick: bool,
    estimated_seconds: float,
    verify: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``parts`` into ``path`` (one run directory per part) and return (the metadata
    of ``reproduce.json``, the comparison of ``summary.json``).

    ``run_part(part, run_dir, resume)`` runs one part's spec into ``run_dir`` (resume: that
    directory already has events to continue); ``on_missing(part, reason)`` is told of a
    part whose data set does not load here (it is reported as "no data", never invented).
    ``verify``: then continue a sample of the converged cells (``engine.reproduce.verify``)
    and record per claim whether its verdict or numbers moved.
    """
    from engine.run.runs import read_run, train_curves

    meta = record.start(
        path,
        parts,
        datasets=datasets,
        tables=tables,
        quick=quick,
        estimated_seconds=estimated_seconds,
    )
    runs: dict[str, dict[str, Any]] = {}
    curves: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        for part in parts:
            sub = path / part.key
            reason = available(part)
            if reason:
                on_missing(part, reason)
                runs[part.key] = {"missing": reason}
                continue
            again = resume and (sub / "events.jsonl").exists()
            before = train_curves(sub) if verify and again else {}
            run_part(part, sub, again)
            runs[part.key] = read_run(sub)
            if verify:  # a resume compacts events.jsonl (the epoch curves go): read them first
                curves[part.key] = train_curves(sub) or before
        comparison = record.finish(path, meta, runs, parts, time.perf_counter() - t0)
        if verify:
            from engine.reproduce.verify import verify as continue_sample

            check = continue_sample(path, parts, runs, comparison["checklist"], run_part, curves)
            record.add_verify(path, meta, comparison, check)
    except BaseException:  # Ctrl-C, SIGTERM, a failed part: the sitting's end is still recorded
        record.interrupted(path, meta, time.perf_counter() - t0)
        raise
    return meta, comparison
