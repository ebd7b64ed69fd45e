"""The ``spectrum`` experiment: tables, columns, cells, summary, and the run store."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.data.dataset import Dataset
from engine.experiments.spectrum import KERNELS, RIDGES, run_spectrum
from engine.run.events import Artifact, CellFinished, Summary, TableRow
from engine.run.runs import read_run
from engine.run.spec import DataSpec, RunSpec, SpectrumSpec
from engine.run.store import TABLE_COLUMNS, RunStore


def _dataset(name: str, n: int, n_test: int, d: int, seed: int, *, dead: int = 0) -> Dataset:
    g = torch.Generator().manual_seed(seed)
    raw = torch.rand(n + n_test, d, generator=g, dtype=torch.float64) ** 3
    raw[:, :dead] = 0.0
    x = raw / raw.norm(dim=1, keepdim=True)
    w = torch.randn(d, generator=g, dtype=torch.float64)
    y = torch.where(x @ w - (x @ w).median() >= 0, 1.0, -1.0).to(torch.float64)
    lab = (y < 0).long().numpy()
    return Dataset(
        name=name, x_train=x[:n], y_train=y[:n], x_test=x[n:], y_test=y[n:],
        x_train_raw=raw[:n], x_test_raw=raw[n:], labels_train=lab[:n], labels_test=lab[n:],
        classes=(0, 1), class_names=("a", "b"), task="binary", image_shape=(d,),
    )  # fmt: skip


class FakeContext:
    def __init__(self, spec: RunSpec, done: frozenset[str] = frozenset()) -> None:
        self.spec = spec
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.done = done
        self.loaded: list[str] = []

    def dataset(self, name: str | None = None, seed: int | None = None) -> Dataset:
        name = name or self.spec.data.name
        self.loaded.append(name)
        dead = 3 if name == "toy" else 0
        return _dataset(name, 40, 15, 12, seed or 0, dead=dead)

    def previous_artifacts(self, name: str) -> list:
        return []

    def is_done(self, cell: str) -> bool:
        return cell in self.done

    def check_cancel(self) -> None:
        pass


def _spec(**kw) -> RunSpec:
    return RunSpec(
        experiment="spectrum", data=DataSpec(name="toy", n_train=40, n_test=15),
        spectrum=SpectrumSpec(**kw), seeds=(3, 4), device="cpu",
    )  # fmt: skip


def test_tables_columns_and_cells():
    ctx = FakeContext(_spec(datasets=("toy2", "toy")))
    events = list(run_spectrum(ctx))
    assert ctx.loaded == ["toy", "toy2"]  # duplicates dropped, first seed only
    rows = [e for e in events if isinstance(e, TableRow)]
    by_table: dict[str, list[dict]] = {}
    for e in rows:
        by_table.setdefault(e.table, []).append(e.row)
    spec_rows = by_table["spectrum"]
    assert [r["dataset"] for r in spec_rows] == ["toy", "toy2"]
    for r in spec_rows:
        assert tuple(r) == TABLE_COLUMNS["spectrum"]
    toy, toy2 = spec_rows
    assert toy["rank"] == 9 and math.isinf(toy["kappa_d"])  # 3 dead columns of 12
    assert toy2["rank"] == 12 and toy2["kappa_d"] == pytest.approx(toy2["kappa_G"])
    assert toy["kappa_G3_direct"] == pytest.approx(toy["kappa_G"] ** 3, rel=1e-8)
    # eigenvalues: only the primary data set, all min(n, d), 1-based, descending
    eig = by_table["eigenvalues"]
    assert len(eig) == 12 and [r["index"] for r in eig] == list(range(1, 13))
    assert all(set(r) == set(TABLE_COLUMNS["eigenvalues"]) for r in eig)
    assert np.all(np.diff([r["eig_G"] for r in eig]) <= 0)
    assert [
        e.data["dataset"] for e in events if isinstance(e, Artifact) and e.name == "eigenvalues"
    ] == ["toy", "toy2"]
    assert {r["kernel"] for r in by_table["ntk_spectrum"]} == {"ntk_raw", "ntk_attn"}
    al = by_table["alignment"]
    targets = {"eig_top", "eig_top_noisy", "eig_bottom", "eig_bottom_noisy", "labels"}
    assert {r["target"] for r in al} == targets
    assert len(al) == 2 * len(KERNELS) * len(targets) * len(RIDGES)
    acc = [r["test_accuracy"] for r in al if r["target"] == "labels"]
    assert all(0 <= a <= 1 for a in acc)
    cells = [e.cell for e in events if isinstance(e, CellFinished)]
    assert cells == ["spectrum/toy/3", "spectrum/toy2/3"]
    assert all(e.cell in cells for e in rows)
    (summ,) = [e for e in events if isinstance(e, Summary)]
    entry = summ.data["datasets"]["toy"]
    assert entry["v2_kappa"] == "kappa" and entry["cube_rel_error"] < 1e-8
    assert len(entry["verdict"]) == 5 and "paper" not in entry


def test_resume_skips_finished_cells_and_rtol_is_used():
    ctx = FakeContext(_spec(datasets=("toy2",), rtol=1e-3), done=frozenset({"spectrum/toy/3"}))
    events = list(run_spectrum(ctx))
    spec_rows = [e.row for e in events if isinstance(e, TableRow) and e.table == "spectrum"]
    assert [r["dataset"] for r in spec_rows] == ["toy2"]
    assert spec_rows[0]["rtol"] == 1e-3
    assert not [e for e in events if isinstance(e, TableRow) and e.table == "eigenvalues"]


def test_end_to_end_run_store(tmp_path):
    pytest.importorskip("sklearn")
    from engine.experiments.runner import run

    spec = RunSpec(
        experiment="spectrum", data=DataSpec(name="digits", n_train=120, n_test=40), seeds=(0,),
        device="cpu",
    )  # fmt: skip
    store = RunStore(tmp_path / "run", spec)
    for ev in run(spec):
        store.write(ev)
    out = read_run(tmp_path / "run")
    assert out["summary"]["status"] == "finished", out["summary"]
    tab = out["tables"]
    assert list(tab["spectrum"][0]) == list(TABLE_COLUMNS["spectrum"])
    assert len(tab["eigenvalues"]) == 64
    assert float(tab["spectrum"][0]["kappa_G3_direct"]) == pytest.approx(
        float(tab["spectrum"][0]["kappa_G_cubed"]), rel=1e-6
    )
    assert "digits" in out["summary"]["spectrum"]["datasets"]


def test_paper_numbers_in_summary_for_mnist(monkeypatch):
    ctx = FakeContext(
        RunSpec(experiment="spectrum", data=DataSpec(name="mnist"), seeds=(0,), device="cpu")
    )
    monkeypatch.setattr(
        ctx, "dataset", lambda name=None, seed=None: _dataset("mnist", 40, 10, 12, 0)
    )
    (summ,) = [e for e in run_spectrum(ctx) if isinstance(e, Summary)]
    paper = summ.data["datasets"]["mnist"]["paper"]
    assert paper["kappa"] == 1.2e3 and paper["n"] == 60_000
    assert paper["m_v2_from_kappa"] == pytest.approx(1.9711e24, rel=1e-4)


def test_verdict_lines():
    from engine.experiments.spectrum import _verdict

    nan = float("nan")

    def k(mse, acc=nan):
        return {"test_rel_mse": mse, "alignment": 0.5, "test_accuracy": acc}

    lines = _verdict(
        {
            "fit": {"G": k(1e-9), "G3": k(1e-6)},
            "helps": {"G": k(0.5, 0.9), "G3": k(0.01, 0.95)},
            "tie": {"G": k(1.0), "G3": k(1.01)},
            "hurts": {"G": k(0.1), "G3": k(1.0)},
        }
    )
    assert lines[0].startswith("fit: both fit it")
    assert (
        lines[1].startswith("helps: G³ helps (50×)") and "accuracy G 0.900 vs G³ 0.950" in lines[1]
    )
    assert lines[2].startswith("tie: tie")
    assert lines[3].startswith("hurts: G³ hurts (10×)")
