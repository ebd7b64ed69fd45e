"""Issue #29: an IDX file beside a different .gz is refused (not the .gz used silently);
CIFAR label names are stripped of terminal escapes and bounded; an export's CSV text
cells cannot start a spreadsheet formula, while numbers (negative ones too) stay numbers
and the run's own CSVs are untouched."""

from __future__ import annotations

import csv
import pickle
from pathlib import Path

import numpy as np
import pytest
from reliability_support import invoke

from engine.data.cifar import _class_names, _clean_name
from engine.data.idx import write_idx
from engine.data.mnist import find_idx_file
from engine.errors import DatasetError
from engine.run.runs import spreadsheet_safe

STEM = "train-images-idx3-ubyte"


def test_raw_and_gz_that_differ_are_refused(tmp_path: Path) -> None:
    write_idx(tmp_path / STEM, np.zeros((3, 28, 28), dtype=np.uint8))
    write_idx(tmp_path / (STEM + ".gz"), np.ones((5, 28, 28), dtype=np.uint8))
    with pytest.raises(DatasetError, match=f"both {STEM} and {STEM}.gz are here and differ"):
        find_idx_file(tmp_path, STEM)


def test_raw_and_gz_of_the_same_file_use_the_raw_one(tmp_path: Path) -> None:
    arr = np.arange(3 * 28 * 28, dtype=np.uint8).reshape(3, 28, 28)
    write_idx(tmp_path / STEM, arr)
    write_idx(tmp_path / (STEM + ".gz"), arr)
    assert find_idx_file(tmp_path, STEM) == tmp_path / STEM
    (tmp_path / STEM).unlink()
    assert find_idx_file(tmp_path, STEM) == tmp_path / (STEM + ".gz")


def test_cifar_label_names_are_cleaned(tmp_path: Path) -> None:
    names = [b"\x1b[31mcat\x1b[0m", b"x" * 500, b"\x07\x08", *[f"c{i}".encode() for i in range(7)]]
    with open(tmp_path / "batches.meta", "wb") as f:
        pickle.dump({b"label_names": names}, f)
    got = _class_names(tmp_path)
    assert got[0] == "[31mcat[0m" and "\x1b" not in "".join(got)
    assert len(got[1]) == 40 and got[1].endswith("…")
    assert got[2] == "class 2"
    assert _clean_name("airplane", 0) == "airplane"


def test_spreadsheet_safe_guards_text_not_numbers() -> None:
    assert spreadsheet_safe('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    assert spreadsheet_safe("@SUM(A1)") == "'@SUM(A1)"
    assert spreadsheet_safe("+cmd") == "'+cmd"
    for number in ("-0.5", "-1e-07", "+3", "-inf", "relu", ""):
        assert spreadsheet_safe(number) == number


def test_export_guards_formula_cells(run_copy: Path, sandbox: Path) -> None:
    train = run_copy / "train.csv"
    rows = list(csv.DictReader(train.open()))
    rows[0]["dataset"] = "=HYPERLINK(1)"
    with train.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    before = train.read_bytes()
    res = invoke("export", run_copy, "--to", sandbox / "exp")
    assert res.exit_code == 0, res.output
    out = list(csv.DictReader((sandbox / "exp" / "train.csv").open()))
    assert out[0]["dataset"] == "'=HYPERLINK(1)"
    assert [r["train_loss"] for r in out] == [r["train_loss"] for r in rows]
    assert train.read_bytes() == before  # the run's own CSV is never changed
