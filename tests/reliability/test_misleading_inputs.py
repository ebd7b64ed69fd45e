"""Issue #29: inputs that were wrongly accepted or answered misleadingly now get one clear
line naming what was wrong (and nothing is created before it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from reliability_support import TINY, invoke, one_line_failure, tree

from engine.errors import ConfigError, DatasetError, shown
from engine.models import TwoLayerNet
from engine.run.spec import TrainSpec
from engine.spectral.alignment import eigen_target_set
from engine.train.loop import divergence_hint


@pytest.mark.parametrize(
    "flags, what",
    [
        (["--experiment", "train,train"], "each experiment once (train is repeated)"),
        (["--gpus-per-cell", "1"], "--gpus-per-cell goes with --executor ray"),
        (["--executor", "local", "--address", "h:1"], "--address goes with --executor ray"),
        (["--epochs", "1000000000000"], "invalid --epochs 1000000000000: a positive integer up to"),
        (["--experiment", "spectrum", "--datasets", "nosuch"], "unknown data set 'nosuch'"),
    ],
)
def test_refused_before_any_run_directory(sandbox: Path, flags: list[str], what: str) -> None:
    args = (
        [a for a in TINY if a not in ("--experiment", "train")] if "--experiment" in flags else TINY
    )
    line = one_line_failure(invoke("headless", *args, *flags, "--out", sandbox / "r"))
    assert what in line
    assert not (sandbox / "r").exists()


def test_a_huge_option_value_is_echoed_cut_short(sandbox: Path) -> None:
    line = one_line_failure(invoke("headless", *TINY, "--classes", "x" * 100_000))
    assert len(line) < 200 and "…" in line
    with pytest.raises(ConfigError) as e:
        TrainSpec(optimizer="y" * 100_000)
    assert len(str(e.value)) < 300
    assert shown("a" * 10) == "'aaaaaaaaaa'" and len(shown("a" * 1000)) == 60


def test_runs_list_root_must_be_a_folder(sandbox: Path) -> None:
    (sandbox / "afile").write_text("x")
    line = one_line_failure(invoke("runs", "list", "--root", sandbox / "afile"))
    assert "a folder of runs (this is a file)" in line


def test_out_is_normalised_before_anything_is_created(sandbox: Path) -> None:
    res = invoke("headless", *TINY, "--out", "runs/../runs2/../runs/dd")
    assert res.exit_code == 0, res.output
    assert (sandbox / "runs" / "dd" / "train.csv").is_file()
    assert not (sandbox / "runs2").exists()


def test_out_may_not_be_the_runs_root(sandbox: Path) -> None:
    (sandbox / "runs").mkdir()
    before = tree(sandbox)
    line = one_line_failure(invoke("headless", *TINY, "--out", sandbox / "runs"))
    assert "not the runs root" in line and tree(sandbox) == before


def test_an_unknown_status_word_is_damage(good_run: Path, sandbox: Path) -> None:
    run = sandbox / "runs" / "boom"
    shutil.copytree(good_run, run)
    env = json.loads((run / "env.json").read_text())
    (run / "env.json").write_text(json.dumps({**env, "status": "exploded"}))
    res = invoke("runs", "list")
    assert res.exit_code == 0 and "damaged" in res.output and "'exploded'" in res.output


def test_zero_images_name_the_data_not_k() -> None:
    zeros = torch.zeros(20, 16, dtype=torch.float64)
    with pytest.raises(DatasetError, match="numerical rank 0 \\(all-zero images"):
        eigen_target_set(zeros, zeros[:5])


def test_divergence_names_an_extreme_init_or_l2() -> None:
    huge = TwoLayerNet(4, 8, sigma_w=1e300)
    assert "sigma_w" in divergence_hint(huge, TrainSpec())
    net = TwoLayerNet(4, 8)
    assert "train.l2" in divergence_hint(net, TrainSpec(l2=1e300))
    assert "lower learning rate" in divergence_hint(net, TrainSpec(lr=10.0))


def test_ray_only_flags_on_resume_are_checked_against_the_saved_spec(run_copy: Path) -> None:
    before = tree(run_copy)
    res = invoke("headless", "--resume", "--out", run_copy, "--gpus-per-cell", "1")
    assert "--gpus-per-cell goes with --executor ray" in one_line_failure(res)
    assert tree(run_copy) == before
