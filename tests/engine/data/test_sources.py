"""npz:, folder: and hf: sources: the same contract, subsets and preprocessing as the built-ins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from own_sources import fixtures, needs_pyarrow, write_all

from engine.data import canonical_name, dataset_status, load_dataset, load_raw, subset_counts
from engine.data.sources import SourceOptions, is_source, parse_source
from engine.errors import ConfigError, DatasetError
from engine.run.spec import DataSpec, RunSpec

KINDS = ["npz", "folder", "hf"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return write_all(tmp_path_factory.mktemp("own"))


def _name(sources: dict[str, str], kind: str) -> str:
    if kind == "hf":
        needs_pyarrow()
    return sources[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_each_source_reads_the_same_pixels(sources: dict[str, str], kind: str) -> None:
    raw = load_raw(_name(sources, kind))
    x, y = fixtures().make_images(40)
    assert raw.image_shape == (16, 16) and raw.scale == 255.0
    (split,) = raw.splits.values()
    assert split.images.dtype == np.uint8 and split.images.shape == (120, 16, 16)
    # the folder source sorts by class name; compare per class label as the source names it
    names = fixtures().CLASSES if kind != "npz" else ("0", "1", "2")
    for c, cname in enumerate(names):
        got = split.images[split.labels == raw.class_names.index(cname)]
        assert np.array_equal(
            np.sort(got.reshape(40, -1), axis=0), np.sort(x[y == c].reshape(40, -1), axis=0)
        )


def test_class_names_come_from_the_source(sources: dict[str, str]) -> None:
    assert load_raw(sources["folder"]).class_names == ("checks", "hstripes", "vstripes")
    assert load_raw(sources["npz"]).class_names == ("0", "1", "2")
    needs_pyarrow()
    assert load_raw(sources["hf"]).class_names == ("hstripes", "vstripes", "checks")


@pytest.mark.parametrize("kind", KINDS)
def test_subset_is_balanced_seeded_unit_norm(sources: dict[str, str], kind: str) -> None:
    name = _name(sources, kind)
    a = load_dataset(name, classes=(0, 2), n_train=30, n_test=10, seed=3)
    b = load_dataset(name, classes=(0, 2), n_train=30, n_test=10, seed=3)
    assert a.task == "binary" and a.x_train.shape == (30, 256)
    assert torch.equal(a.x_train, b.x_train)
    assert torch.allclose(a.x_train.norm(dim=1), torch.ones(30, dtype=torch.float64))
    assert float(a.x_train_raw.max()) <= 1.0 and float(a.x_train_raw.min()) >= 0.0
    assert sorted(np.bincount(a.labels_train).tolist()) == [0, 15, 15]
    assert "one split only" in a.notes[-1]
    c = load_dataset(name, n_train=30, n_test=9, seed=0, center=True)
    assert c.task == "multiclass" and c.pixel_mean is not None


def test_folder_train_test_split_folders(tmp_path: Path) -> None:
    m = fixtures()
    x, y = m.make_images(10)
    m.write_folder(tmp_path / "train", x, y)
    m.write_folder(tmp_path / "test", x[::2], y[::2])
    raw = load_raw(f"folder:{tmp_path}")
    assert set(raw.splits) == {"train", "test"}
    assert raw.splits["train"].size == 30 and raw.splits["test"].size == 15
    counts = subset_counts(f"folder:{tmp_path}")
    assert counts.splits["test"] == (5, 5, 5)


def test_folder_resize_and_mode(tmp_path: Path) -> None:
    from PIL import Image

    for c, (size, mode) in enumerate([((20, 12), "RGB"), ((8, 8), "L")]):
        d = tmp_path / f"c{c}"
        d.mkdir()
        for k in range(3):
            Image.new(mode, size, color=(10 * k, 0, 0) if mode == "RGB" else 10 * k).save(
                d / f"{k}.png"
            )
    name = f"folder:{tmp_path}"
    with pytest.raises(DatasetError, match="mixed image sizes or modes"):
        load_raw(name)
    raw = load_raw(name, source=SourceOptions(image_size=10, mode="RGB"))
    assert raw.image_shape == (10, 10, 3)
    assert load_raw(name, source=SourceOptions(image_size=6, mode="L")).image_shape == (6, 6)


def test_npz_train_test_floats_and_string_labels(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    p = tmp_path / "f.npz"
    np.savez(
        p,
        x_train=rng.random((12, 5)),
        y_train=np.array(["cat", "dog"] * 6),
        x_test=rng.random((4, 5)),
        y_test=np.array(["dog", "cat"] * 2),
    )
    raw = load_raw(f"npz:{p}")
    assert raw.scale == 1.0 and raw.class_names == ("cat", "dog") and raw.image_shape == (5,)
    assert set(raw.splits) == {"train", "test"}
    assert raw.splits["test"].labels.tolist() == [1, 0, 1, 0]


def test_hf_parquet_without_datasets(tmp_path: Path) -> None:
    needs_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    m = fixtures()
    x, y = m.make_images(5)
    for split, sl in (("train", slice(0, None, 1)), ("test", slice(0, None, 3))):
        t = pa.table({"img": [{"bytes": m._png(i), "path": None} for i in x[sl]], "fine": y[sl]})
        pq.write_table(t, tmp_path / f"{split}-00000-of-00001.parquet")
    raw = load_raw(f"hf:{tmp_path}", source=SourceOptions(label_column="fine"))
    assert set(raw.splits) == {"train", "test"} and raw.splits["train"].size == 15


def test_hf_dataset_dict(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="needs the datasets package ([hf] extra)")
    m = fixtures()
    x, y = m.make_images(6)
    feats = datasets.Features(
        {"image": datasets.Image(), "label": datasets.ClassLabel(names=list(m.CLASSES))}
    )
    ds = datasets.Dataset.from_dict(
        {"image": [{"bytes": m._png(i), "path": None} for i in x], "label": y.tolist()},
        features=feats,
    )
    datasets.DatasetDict({"train": ds, "test": ds.select(range(0, 18, 2))}).save_to_disk(
        str(tmp_path / "dd")
    )
    raw = load_raw(f"hf:{tmp_path / 'dd'}")
    assert set(raw.splits) == {"train", "test"} and raw.class_names == m.CLASSES


def test_names_status_and_spec(sources: dict[str, str], tmp_path: Path) -> None:
    name = sources["folder"]
    assert is_source(name) and not is_source("mnist")
    assert canonical_name("FOLDER:" + name.split(":", 1)[1]) == name
    assert parse_source("npz:~/a.npz").path == Path("~/a.npz").expanduser()
    st = dataset_status(name)
    assert st.found and st.problem is None and st.splits == {"all": 120}
    missing = dataset_status(f"folder:{tmp_path / 'nope'}")
    assert not missing.found
    spec = RunSpec(data=DataSpec(name=name, image_size=12, mode="RGB"))
    back = RunSpec.from_toml(spec.to_toml())
    assert back == spec and back.data.source_options() == SourceOptions(12, "RGB", None, "label")
    with pytest.raises(ConfigError, match="data.image_column='img': set only for hf: sources"):
        RunSpec(data=DataSpec(name=name, image_column="img"))  # a folder: has no columns
    for bad in (dict(image_size=0), dict(mode="P"), dict(label_column=" "), dict(name="zip:x")):
        with pytest.raises(ConfigError):
            DataSpec(**bad)  # type: ignore[arg-type]
