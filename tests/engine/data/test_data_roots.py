"""Data root resolution, status, and the not-found message."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.data import DATASETS, dataset_status, default_data_home, find_root, load_dataset
from engine.errors import DatasetError


def test_explicit_root_is_used_or_refused(tmp_path: Path, write_idx_set, monkeypatch) -> None:
    write_idx_set(tmp_path / "env" / "mnist", train=None, test=20)
    write_idx_set(tmp_path / "mine", train=None, test=20)
    monkeypatch.setenv("MALLEABILITY_DATA", str(tmp_path / "env"))
    (tmp_path / "empty").mkdir()
    assert find_root("mnist", tmp_path / "mine") == tmp_path / "mine"
    # An explicit folder without the files is never replaced by $MALLEABILITY_DATA.
    assert find_root("mnist", tmp_path / "empty") is None
    assert find_root("mnist") == tmp_path / "env" / "mnist"
    with pytest.raises(DatasetError) as e:
        load_dataset("mnist", root=tmp_path / "empty", n_train=10, n_test=10, seed=0)
    msg = str(e.value)
    assert "files not found" in msg and str(tmp_path / "empty" / "mnist") in msg
    assert "malleability data fetch mnist" in msg and "--data-dir" in msg
    with pytest.raises(DatasetError, match="data dir .*nope does not exist"):
        load_dataset("mnist", root=tmp_path / "nope", n_train=10, n_test=10, seed=0)


def test_a_folder_named_after_another_data_set_is_not_used(
    tmp_path: Path, write_idx_set, monkeypatch
) -> None:
    write_idx_set(tmp_path / "mnist", train=None, test=20)
    info = dataclasses.replace(DATASETS["fashion-mnist"], system_dirs=())
    monkeypatch.setitem(DATASETS, "fashion-mnist", info)
    assert find_root("mnist", tmp_path / "mnist") == tmp_path / "mnist"
    assert find_root("fashion-mnist", tmp_path / "mnist") is None  # same file names, other data


def test_env_then_user_dir_then_system(
    tmp_path: Path, write_idx_set, monkeypatch, isolated_data_env
) -> None:
    user = isolated_data_env / "malleability" / "mnist"
    write_idx_set(user, train=None, test=20)
    assert find_root("mnist") == user  # platformdirs user_data_dir honours XDG_DATA_HOME
    env = tmp_path / "env"
    write_idx_set(env, train=None, test=20)  # files directly in $MALLEABILITY_DATA
    monkeypatch.setenv("MALLEABILITY_DATA", str(env))
    assert find_root("mnist") == env
    write_idx_set(env / "mnist", train=None, test=20)  # <env>/<name> wins over <env>
    assert find_root("mnist") == env / "mnist"
    assert default_data_home() == env
    system = tmp_path / "system"
    write_idx_set(system, train=10, test=10)
    info = dataclasses.replace(DATASETS["fashion-mnist"], system_dirs=(str(system),))
    monkeypatch.setitem(DATASETS, "fashion-mnist", info)
    monkeypatch.setenv("MALLEABILITY_DATA", str(tmp_path / "nothing"))
    assert find_root("fashion-mnist") == system


def test_status(tmp_path: Path, write_idx_set) -> None:
    st = dataset_status("mnist", tmp_path)
    assert not st.found and "malleability data fetch mnist" in st.how_to_get
    write_idx_set(tmp_path / "mnist", train=12, test=8)
    st = dataset_status("mnist", tmp_path)
    assert st.found and st.path == tmp_path / "mnist" and st.splits == {"train": 12, "test": 8}
    assert st.official == {"train": 60000, "test": 10000} and not st.complete
    (tmp_path / "mnist" / "train-images-idx3-ubyte.gz").write_bytes(b"\x1f\x8bnot really")
    st = dataset_status("mnist", tmp_path)
    assert st.found and st.problem and "corrupt gzip" in st.problem
    assert dataset_status("digits").builtin and dataset_status("digits").splits == {"all": 1797}


def test_registry_entries_are_complete() -> None:
    for name, info in DATASETS.items():
        assert info.name == name and info.description and len(info.class_names) >= 2
        if not info.builtin:
            assert info.mirrors and info.remote and info.files
            assert all(rf.md5 and len(rf.md5) == 32 for rf in info.remote)
