"""Class-balanced, seeded, disjoint subsets; targets; impossible subsets (digits + in-memory data)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.data import RawData, RawSplit, load_dataset
from engine.data.subset import balanced_counts, build_dataset, select_indices
from engine.errors import ConfigError, DatasetError


def _raw(splits: dict[str, int], k: int = 4) -> RawData:
    """Unique rows (row i holds i) with labels i % k, in the given splits."""
    out, start = {}, 0
    for name, n in splits.items():
        ids = np.arange(start, start + n)
        images = np.stack([ids, ids * 0 + 1, ids % 7], axis=1).astype(np.float64)
        out[name] = RawSplit(images, ids % k, origin=f"{name}.bin")
        start += n
    return RawData("toy", out, tuple(f"c{i}" for i in range(k)), (3,), 10000.0, "memory")


@pytest.mark.parametrize(
    "n,k,want", [(10, 3, [4, 3, 3]), (9, 3, [3, 3, 3]), (11, 10, [2] + [1] * 9)]
)
def test_balanced_counts(n: int, k: int, want: list[int]) -> None:
    assert balanced_counts(n, k) == want


def test_binary_targets_first_class_positive() -> None:
    ds = load_dataset("digits", classes=(8, 3), n_train=30, n_test=10, seed=0)
    assert ds.task == "binary" and ds.n_out == 1 and ds.classes == (8, 3)
    assert ds.y_train.dtype == torch.float64
    np.testing.assert_array_equal(ds.y_train.numpy(), np.where(ds.labels_train == 8, 1.0, -1.0))
    np.testing.assert_array_equal(ds.y_test.numpy(), np.where(ds.labels_test == 8, 1.0, -1.0))
    assert (ds.labels_train == 8).sum() == 15 and (ds.labels_test == 3).sum() == 5


def test_multiclass_labels_in_given_order() -> None:
    ds = load_dataset("digits", classes=(7, 0, 5), n_train=31, n_test=9, seed=2)
    assert ds.task == "multiclass" and ds.n_out == 3 and ds.y_train.dtype == torch.int64
    lut = {7: 0, 0: 1, 5: 2}
    assert ds.y_train.tolist() == [lut[int(v)] for v in ds.labels_train]
    assert [int((ds.labels_train == c).sum()) for c in (7, 0, 5)] == [11, 10, 10]


def test_digits_pixels_and_note() -> None:
    ds = load_dataset("digits", n_train=50, n_test=20, seed=0)
    raw = ds.x_train_raw.numpy()
    assert raw.min() >= 0 and raw.max() <= 1 and ds.d == 64 and ds.image_shape == (8, 8)
    np.testing.assert_allclose(raw * 16, np.round(raw * 16), atol=1e-12)  # 17 grey levels
    assert ds.notes and "one split only (sklearn.datasets.load_digits, 1797 images)" in ds.notes[0]


def test_seeded_and_deterministic() -> None:
    a = load_dataset("digits", n_train=40, n_test=20, seed=5)
    b = load_dataset("digits", n_train=40, n_test=20, seed=5)
    c = load_dataset("digits", n_train=40, n_test=20, seed=6)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    assert not torch.equal(a.x_train, c.x_train)


def test_single_split_disjoint_and_train_independent_of_n_test() -> None:
    raw = _raw({"all": 400})
    _, tr, _, te, note = select_indices(raw, (0, 1, 2, 3), 100, 60, seed=1)
    assert len(set(tr)) == 100 and len(set(te)) == 60 and not set(tr) & set(te)
    assert note and "disjoint" in note
    _, tr2, _, _, _ = select_indices(raw, (0, 1, 2, 3), 100, 200, seed=1)
    assert sorted(tr) == sorted(tr2)  # each class's draw has its own stream


def test_two_splits_draw_from_their_own_split() -> None:
    raw = _raw({"train": 80, "test": 40})
    ds = build_dataset(raw, classes=None, n_train=20, n_test=12, seed=0)
    ids_tr = np.round(ds.x_train_raw.numpy()[:, 0] * 10000).astype(int)
    ids_te = np.round(ds.x_test_raw.numpy()[:, 0] * 10000).astype(int)
    assert ids_tr.max() < 80 and ids_te.min() >= 80 and ds.notes == ()
    assert (
        np.array_equal(ids_tr % 4, ds.labels_train)
        and np.bincount(ds.labels_test).tolist() == [3] * 4
    )


def test_impossible_subsets_say_what_exists() -> None:
    labels = np.asarray(__import__("sklearn.datasets").datasets.load_digits().target)
    have5 = int((labels == 5).sum())
    with pytest.raises(
        DatasetError, match=rf"class 5 \(5\) has {have5} images in sklearn\.datasets\.load_digits"
    ):
        load_dataset("digits", classes=(5, 6), n_train=2 * have5, n_test=10, seed=0)
    with pytest.raises(
        DatasetError, match=r"no class 12; valid classes are 0 \(0\), 1 \(1\).*9 \(9\)"
    ):
        load_dataset("digits", classes=(3, 12), n_train=10, n_test=10, seed=0)
    raw = _raw({"train": 40, "test": 8})
    with pytest.raises(
        DatasetError, match=r"class 0 \(c0\) has 2 images in the test split \(test\.bin\), 3 asked"
    ):
        build_dataset(raw, classes=None, n_train=8, n_test=12, seed=0)
    with pytest.raises(DatasetError, match="n_test=3 is smaller than the 4 classes"):
        build_dataset(raw, classes=None, n_train=8, n_test=3, seed=0)


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"n_train": 0}, "n_train"),
        ({"seed": -1}, "seed"),
        ({"classes": (3,)}, "classes"),
        ({"classes": (3, 3)}, "classes"),
    ],
)
def test_invalid_arguments_are_config_errors(kw: dict, field: str) -> None:
    args = {"n_train": 20, "n_test": 10, "seed": 0, **kw}
    with pytest.raises(ConfigError) as e:
        load_dataset("digits", **args)
    assert e.value.field == field


def test_unknown_name_lists_known() -> None:
    with pytest.raises(
        DatasetError,
        match="unknown data set 'imagenet': known are digits, mnist, fashion-mnist, cifar10, synthetic",
    ):
        load_dataset("imagenet", n_train=10, n_test=10, seed=0)


def test_subset_problem_is_the_loaders_rule():
    """Checked without drawing (the TUI form, as you type): the same verdict and message."""
    import pytest

    from engine.data import load_dataset, subset_counts, subset_problem
    from engine.errors import DatasetError

    counts = subset_counts("digits")
    assert sum(counts.splits["all"]) == 1797 and len(counts.class_names) == 10
    assert subset_problem(counts, (3, 8), 200, 50) is None
    for classes, n_train, n_test, field in (
        ((3, 11), 100, 20, "classes"),
        (None, 2000, 200, "n_train"),  # ~180 images a class, 220 asked
        ((3, 8), 300, 100, "n_train"),
        (None, 5, 20, "n_train"),  # fewer than the 10 classes
        ((0, 1), 20, 1, "n_test"),
    ):
        got = subset_problem(counts, classes, n_train, n_test)
        assert got is not None and got[0] == field, (classes, n_train, n_test, got)
        with pytest.raises(DatasetError) as e:
            load_dataset("digits", classes=classes, n_train=n_train, n_test=n_test, seed=0)
        assert str(e.value) == got[1]
