"""The loaders on the real files in ../shared/data and /usr/share/datasets (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.data import dataset_status, load_dataset, load_raw
from engine.data.subset import build_dataset
from engine.errors import DatasetError

FASHION = Path("/usr/share/datasets/fashion-mnist")
# official MNIST test-set class counts (shared/data/mnist/SOURCE.md)
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.mark.shared_data
def test_mnist_test_split_only(shared_data: Path) -> None:
    raw = load_raw("mnist", shared_data)
    assert list(raw.splits) == ["test"]
    assert np.bincount(raw.splits["test"].labels).tolist() == MNIST_TEST_COUNTS
    ds = load_dataset(
        "mnist", root=shared_data / "mnist", classes=(3, 8), n_train=100, n_test=40, seed=0
    )
    (note,) = ds.notes
    assert (
        "only the test split" in note
        and "10000 images" in note
        and str(shared_data / "mnist") in note
    )
    assert ds.task == "binary" and ds.d == 784 and (ds.y_train > 0).sum() == 50
    assert not {r.tobytes() for r in ds.x_train_raw.numpy()} & {
        r.tobytes() for r in ds.x_test_raw.numpy()
    }
    # about 67 pixels are zero in every MNIST image (docs/protocol.md#spectra): the corners at least
    assert float(ds.x_train_raw.reshape(-1, 28, 28)[:, 0, 0].abs().max()) == 0.0
    with pytest.raises(DatasetError, match=r"class 5 \(5\) has 892 images"):
        load_dataset("mnist", root=shared_data, classes=(5, 6), n_train=1790, n_test=10, seed=0)


@pytest.mark.shared_data
def test_cifar10_both_splits(shared_data: Path) -> None:
    raw = load_raw("cifar10", shared_data)
    assert {k: v.size for k, v in raw.splits.items()} == {"train": 2500, "test": 2500}
    # the first 20 labels of the official test set (shared/data/cifar10/SOURCE.md)
    assert raw.splits["test"].labels[:20].tolist() == [
        3,
        8,
        8,
        0,
        6,
        6,
        1,
        6,
        3,
        1,
        0,
        9,
        5,
        7,
        9,
        8,
        5,
        7,
        8,
        6,
    ]
    red = raw.splits["train"].images[:, 0].astype(np.float64).mean()
    assert red == pytest.approx(125.38, abs=0.01)  # measured R mean of data_batch_1 (SOURCE.md)
    ds = load_dataset("cifar10", root=shared_data, classes=(1, 0), n_train=60, n_test=20, seed=1)
    assert ds.notes == () and ds.class_names == ("automobile", "airplane") and ds.d == 3072
    assert ds.image_shape == (3, 32, 32)
    st = dataset_status("cifar10", shared_data / "cifar10")
    assert st.path == shared_data / "cifar10" and st.splits == {"train": 2500, "test": 2500}


@pytest.mark.skipif(
    not FASHION.is_dir(),
    reason=f"Fashion-MNIST not installed at {FASHION} (apt-get install dataset-fashion-mnist)",
)
def test_fashion_mnist_system_location() -> None:
    st = dataset_status("fashion-mnist")
    assert st.path == FASHION and st.complete
    raw = load_raw("fashion-mnist")  # no root: found through the system location
    ds = build_dataset(raw, classes=(0, 9, 5), n_train=30, n_test=15, seed=0)
    assert ds.source == str(FASHION) and ds.notes == () and ds.task == "multiclass"
    assert ds.class_names == ("T-shirt/top", "Ankle boot", "Sandal")
    assert np.bincount(raw.splits["train"].labels).tolist() == [6000] * 10
    assert np.bincount(raw.splits["test"].labels).tolist() == [1000] * 10
