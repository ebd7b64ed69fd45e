"""engine.results.tables: one typed row per table, the one parser of a table cell."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest

from engine.results.tables import TABLES, FlipRateRow, InfluenceCheckRow, RowError, TrainRow
from engine.run.store import TABLE_COLUMNS
from engine.run.validate import DamagedRun, read_csv_table

FLIP = {
    "model": "MLP-Attn",
    "dataset": "mnist",
    "attack": "pgd",
    "eps": 0.3,
    "training": "standard",
    "seed": 1,
    "flip_rate": 0.25,
    "spearman": 0.5,
    "topk_overlap": math.nan,
    "n_selected": 40,
    "ridge": "objective:0.5",
    "ranking": "abs_signed_mean",
    "n_flipped": 10,
    "n_helpful": None,
    "flipped_helpful": None,
    "flipped_harmful": None,
    "converged": True,
    "above_chance": None,
}


def _csv_round_trip(name: str, row: dict) -> dict[str, str]:
    """``row`` written as the store writes it (None/NaN → ""), read back as text."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, TABLE_COLUMNS[name])
    w.writeheader()
    w.writerow(
        {
            k: "" if v is None or (isinstance(v, float) and math.isnan(v)) else v
            for k, v in row.items()
        }
    )
    return next(csv.DictReader(io.StringIO(buf.getvalue())))


def test_every_table_has_its_columns_in_order() -> None:
    assert set(TABLES) == set(TABLE_COLUMNS)
    for name, t in TABLES.items():
        assert t.TABLE == name and t.columns() == TABLE_COLUMNS[name]


def test_event_row_and_csv_row_give_the_same_typed_row() -> None:
    live = FlipRateRow.from_row(FLIP)
    disk = FlipRateRow.from_row(_csv_round_trip("flip_rates", FLIP))
    assert live == FlipRateRow.from_row(live.to_row())  # round trip
    for a, b in ((live, disk), (disk, FlipRateRow.from_row(disk.to_row()))):
        for c in FlipRateRow.columns():
            x, y = getattr(a, c), getattr(b, c)
            assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), c
    assert disk.n_flipped == 10 and isinstance(disk.n_flipped, int) and disk.eps == 0.3
    assert disk.n_helpful is None and math.isnan(disk.topk_overlap)
    assert disk.converged is True and disk.above_chance is None


@pytest.mark.parametrize("name", sorted(TABLES))
def test_defaults_round_trip_for_every_table(name: str) -> None:
    t = TABLES[name]
    row = t()
    assert tuple(row.to_row()) == TABLE_COLUMNS[name]
    back = t.from_row(_csv_round_trip(name, row.to_row()))
    assert back.to_row().keys() == row.to_row().keys()


def test_missing_columns_are_missing_values() -> None:
    old = {k: v for k, v in FLIP.items() if k not in ("converged", "above_chance", "n_helpful")}
    r = FlipRateRow.from_row(old)
    assert r.converged is None and r.n_helpful is None


@pytest.mark.parametrize(
    ("column", "value", "what"),
    [
        ("n_flipped", "2.5", "an integer"),
        ("eps", "wide", "a number"),
        ("converged", "maybe", "True or False"),
        ("seed", True, "an integer"),
    ],
)
def test_a_bad_cell_is_one_line_naming_the_column(column: str, value: object, what: str) -> None:
    with pytest.raises(RowError) as e:
        FlipRateRow.from_row({**FLIP, column: value})
    msg = str(e.value)
    assert msg == f"flip_rates: {column}={value!r} is not {what}" and "\n" not in msg


def test_influence_check_text_columns_read_back(tmp_path: Path) -> None:
    """context and estimator are labels: a reopened influence_check run is not 'damaged'
    (the old global column lists read them as numbers)."""
    row = InfluenceCheckRow(
        model="MLP-Attn",
        seed=0,
        width=64,
        n_train=200,
        context="refit",
        estimator="kernel_loo",
        n_points=10,
    )
    p = tmp_path / "influence_check.csv"
    text = _csv_round_trip("influence_check", row.to_row())
    with p.open("w", newline="") as f:
        w = csv.DictWriter(f, TABLE_COLUMNS["influence_check"])
        w.writeheader()
        w.writerow(text)
    (back,) = read_csv_table(p, InfluenceCheckRow)
    assert InfluenceCheckRow.from_row(back).estimator == "kernel_loo"
    rows = list(csv.DictReader(p.open(newline="")))
    rows[0]["n_points"] = "x"
    with p.open("w", newline="") as f:
        w = csv.DictWriter(f, TABLE_COLUMNS["influence_check"])
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(DamagedRun, match="line 2: n_points='x' is not an integer"):
        read_csv_table(p, InfluenceCheckRow)


def test_train_row_types() -> None:
    r = TrainRow.from_row({"model": "2L-ReLU", "width": "16", "epochs": 200.0, "seconds": ""})
    assert r.width == 16 and r.epochs == 200 and math.isnan(r.seconds) and r.training == ""


def test_flip_readers_parse_through_the_row_type() -> None:
    """flip_summary (summaries, reproduce, report), the TUI's flip rows and the figures read
    flip_rates through FlipRateRow.from_row: a live row and its CSV text pool the same, and
    a bad cell is the row type's one-line error, not a NaN that drops the row."""
    from engine.experiments.flip_summary import pooled
    from malleability_tui.views.flips import flip_rows

    disk = _csv_round_trip("flip_rates", FLIP)
    assert pooled([FLIP]) == pooled([disk])
    assert flip_rows([FLIP])[0].cells() == flip_rows([disk])[0].cells()
    with pytest.raises(RowError, match=r"^flip_rates: n_flipped='ten' is not an integer$"):
        pooled([{**disk, "n_flipped": "ten"}])
