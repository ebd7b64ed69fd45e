"""What each data set is, where its files live, and how to get them.

Data root resolution (first folder holding the files wins; see :func:`search_bases`):

1. an explicit ``root`` (``--data-dir``), which must exist and is then the only place
   searched (the steps below apply only without one);
2. ``$MALLEABILITY_DATA`` (one folder, or several joined by ``os.pathsep``);
3. ``platformdirs.user_data_dir("malleability")`` (where ``malleability data fetch`` writes);
4. system locations of the data set (``/usr/share/datasets/fashion-mnist``, Debian).

In each base folder B the files may sit in ``B/<alias>`` (e.g. ``B/mnist``) or in B itself,
so a root can be the folder of the files or its parent. Because MNIST and Fashion-MNIST
use the same file names, B itself is skipped when its name is another data set's alias
(a ``--data-dir .../mnist`` shared by several data sets never serves Fashion-MNIST).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import DatasetError

ENV_VAR = "MALLEABILITY_DATA"


@dataclass(frozen=True)
class RemoteFile:
    """One downloadable file of a data set and its published checksum."""

    filename: str
    """File name, appended to each mirror's base URL."""
    md5: str | None = None
    """Published MD5 (hex), if any."""
    sha256: str | None = None
    """Published SHA-256 (hex), if any."""
    extract: bool = False
    """A tar archive to unpack (safely) after the download; the archive is then removed."""


@dataclass(frozen=True)
class DatasetInfo:
    """Static description of one data set (the ``DATASETS`` registry values)."""

    name: str
    description: str
    kind: str
    """Loader family: "idx", "cifar", "builtin"."""
    files: tuple[str, ...]
    """Files expected in the data folder (IDX files may also end in ``.gz``)."""
    splits: Mapping[str, int]
    """Official split sizes."""
    class_names: tuple[str, ...]
    image_shape: tuple[int, ...]
    aliases: tuple[str, ...] = ()
    """Sub-folder names searched under each base folder, before the base itself."""
    inner: tuple[str, ...] = ()
    """A further sub-folder a candidate may hold (``cifar-10-batches-py``)."""
    system_dirs: tuple[str, ...] = ()
    """System-wide locations searched last."""
    mirrors: tuple[str, ...] = ()
    """Base URLs tried in order by ``malleability data fetch``."""
    remote: tuple[RemoteFile, ...] = ()
    homepage: str = ""
    citation: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def builtin(self) -> bool:
        """True when no files are needed (scikit-learn digits, synthetic)."""
        return self.kind == "builtin"

    @property
    def how_to_get(self) -> str:
        """One line telling a user how to make the data set available."""
        if self.builtin:
            return "built in: nothing to download"
        return (
            f"run `malleability data fetch {self.name}`, or pass --data-dir DIR "
            f"(or set ${ENV_VAR}) to a folder holding {', '.join(self.files)}"
        )


_IDX_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)

DATASETS: dict[str, DatasetInfo] = {
    "digits": DatasetInfo(
        name="digits",
        description="scikit-learn handwritten digits: 1,797 real 8×8 images, 10 classes",
        kind="builtin",
        files=(),
        splits={"all": 1797},
        class_names=tuple(str(i) for i in range(10)),
        image_shape=(8, 8),
        homepage="https://scikit-learn.org/stable/datasets/toy_dataset.html#digits-dataset",
    ),
    "mnist": DatasetInfo(
        name="mnist",
        description="MNIST handwritten digits: 28×28 grey, 10 classes",
        kind="idx",
        files=_IDX_FILES,
        splits={"train": 60000, "test": 10000},
        class_names=tuple(str(i) for i in range(10)),
        image_shape=(28, 28),
        aliases=("mnist", "MNIST/raw", "MNIST"),
        mirrors=(
            "https://ossci-datasets.s3.amazonaws.com/mnist/",
            "https://storage.googleapis.com/cvdf-datasets/mnist/",
        ),
        remote=(
            RemoteFile("train-images-idx3-ubyte.gz", md5="f68b3c2dcbeaaa9fbdd348bbdeb94873"),
            RemoteFile("train-labels-idx1-ubyte.gz", md5="d53e105ee54ea40749a09fcbcd1e9432"),
            RemoteFile("t10k-images-idx3-ubyte.gz", md5="9fb629c4189551a2d022fa330f9573f3"),
            RemoteFile("t10k-labels-idx1-ubyte.gz", md5="ec29112dd5afa0611ce80d1b7f02629c"),
        ),
        homepage="http://yann.lecun.com/exdb/mnist/",
        citation="Y. LeCun, C. Cortes, C. J. C. Burges, The MNIST database of handwritten digits",
    ),
    "fashion-mnist": DatasetInfo(
        name="fashion-mnist",
        description="Fashion-MNIST (Zalando) clothing: 28×28 grey, 10 classes",
        kind="idx",
        files=_IDX_FILES,
        splits={"train": 60000, "test": 10000},
        class_names=(
            "T-shirt/top",
            "Trouser",
            "Pullover",
            "Dress",
            "Coat",
            "Sandal",
            "Shirt",
            "Sneaker",
            "Bag",
            "Ankle boot",
        ),  # fmt: skip
        image_shape=(28, 28),
        aliases=("fashion-mnist", "fashion_mnist", "FashionMNIST/raw", "FashionMNIST"),
        system_dirs=("/usr/share/datasets/fashion-mnist",),
        mirrors=(
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
            "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
        ),
        remote=(
            RemoteFile("train-images-idx3-ubyte.gz", md5="8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
            RemoteFile("train-labels-idx1-ubyte.gz", md5="25c81989df183df01b3e8a0aad5dffbe"),
            RemoteFile("t10k-images-idx3-ubyte.gz", md5="bef4ecab320f06d8554ea6380940ec79"),
            RemoteFile("t10k-labels-idx1-ubyte.gz", md5="bb300cfdad3c16e7a12a480ee83cd310"),
        ),
        homepage="https://github.com/zalandoresearch/fashion-mnist",
        citation="H. Xiao, K. Rasul, R. Vollgraf, Fashion-MNIST, arXiv:1708.07747 (2017)",
        extra={"debian": "apt-get install dataset-fashion-mnist"},
    ),
    "cifar10": DatasetInfo(
        name="cifar10",
        description="CIFAR-10 photos: 32×32 colour (3×32×32, channel-first), 10 classes",
        kind="cifar",
        files=(
            "data_batch_1",
            "data_batch_2",
            "data_batch_3",
            "data_batch_4",
            "data_batch_5",
            "test_batch",
            "batches.meta",
        ),  # fmt: skip
        splits={"train": 50000, "test": 10000},
        class_names=(
            "airplane",
            "automobile",
            "bird",
            "cat",
            "deer",
            "dog",
            "frog",
            "horse",
            "ship",
            "truck",
        ),  # fmt: skip
        image_shape=(3, 32, 32),
        aliases=("cifar10", "cifar-10", "CIFAR10"),
        inner=("cifar-10-batches-py",),
        mirrors=("https://www.cs.toronto.edu/~kriz/",),
        remote=(
            RemoteFile(
                "cifar-10-python.tar.gz",
                md5="c58f30108f718f92721af3b95e74349a",
                sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
                extract=True,
            ),
        ),
        homepage="https://www.cs.toronto.edu/~kriz/cifar.html",
        citation="A. Krizhevsky, Learning Multiple Layers of Features from Tiny Images (2009)",
    ),
    "synthetic": DatasetInfo(
        name="synthetic",
        description="Gaussian data with a prescribed Gram spectrum (κ = 1e3, d = 64), binary",
        kind="builtin",
        files=(),
        splits={"train": 5000, "test": 1000},
        class_names=("positive", "negative"),
        image_shape=(64,),
    ),
}

_ALIASES = {
    "fashion_mnist": "fashion-mnist",
    "fashionmnist": "fashion-mnist",
    "fmnist": "fashion-mnist",
    "cifar-10": "cifar10",
    "cifar_10": "cifar10",
}


def canonical_name(name: str) -> str:
    """'Fashion_MNIST' → 'fashion-mnist'; unknown names raise DatasetError listing known ones.

    A source name (``npz:FILE``, ``folder:DIR``, ``hf:DIR``) is returned as ``kind:path``.
    """
    from engine.data.sources import is_source, parse_source

    if is_source(name):
        return parse_source(name).name
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in DATASETS:
        raise DatasetError(
            f"unknown data set {name!r}: known are {', '.join(DATASETS)}, "
            "or a source npz:FILE, folder:DIR, hf:DIR"
        )
    return key


def get_info(name: str) -> DatasetInfo:
    """The registry entry of ``name`` (aliases accepted); a source has none (DatasetError)."""
    key = canonical_name(name)
    if key not in DATASETS:
        raise DatasetError(
            f"{key}: a data source, not a built-in data set (it has no files to fetch)"
        )
    return DATASETS[key]


def user_data_home() -> Path:
    """``platformdirs.user_data_dir("malleability")``."""
    import platformdirs

    return Path(platformdirs.user_data_dir("malleability"))


def default_data_home() -> Path:
    """Where ``fetch`` writes by default: the first ``$MALLEABILITY_DATA`` entry, else the user dir."""
    env = [p for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    return Path(env[0]).expanduser() if env else user_data_home()


def _other_aliases(name: str) -> set[str]:
    return {
        a.split("/")[0].lower()
        for other in DATASETS.values()
        if other.name != name
        for a in (other.name, *other.aliases)
    }


def search_bases(name: str, root: str | os.PathLike | None = None) -> list[Path]:
    """Candidate folders for ``name`` in search order (existing or not).

    ``root/<alias>`` and ``root`` only when an explicit ``root`` is given (an explicit folder
    is used or refused, never silently replaced); else the same for each
    ``$MALLEABILITY_DATA`` entry and the user data dir, then the data set's system dirs.
    """
    info = get_info(name)
    if root is not None:
        bases = [Path(root).expanduser()]
    else:
        bases = [Path(p).expanduser() for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
        bases.append(user_data_home())
    others = _other_aliases(info.name)
    out: list[Path] = []
    for base in bases:
        out.extend(base / a for a in info.aliases)
        if base.name.lower() not in others:
            out.append(base)
    if root is None:
        out.extend(Path(p) for p in info.system_dirs)
    return out


def _holds_files(folder: Path, info: DatasetInfo) -> bool:
    if not folder.is_dir():
        return False
    for f in info.files:
        stem = f[:-3] if f.endswith(".gz") else f
        variants = {f, stem, stem + ".gz", stem.replace("-idx", ".idx")}
        if any((folder / v).is_file() for v in variants):
            return True
    return False


def locate(name: str, folder: str | os.PathLike) -> Path | None:
    """``folder`` (or its known inner folder) when it holds any file of ``name``, else None."""
    info = get_info(name)
    folder = Path(folder)
    for cand in (folder, *(folder / i for i in info.inner)):
        if _holds_files(cand, info):
            return cand
    return None


def find_root(name: str, root: str | os.PathLike | None = None) -> Path | None:
    """The folder holding ``name``'s files, following the resolution order above.

    Returns None when nothing is found, and for built-in data sets (digits, synthetic).
    """
    info = get_info(name)
    if info.builtin:
        return None
    for cand in search_bases(info.name, root):
        hit = locate(info.name, cand)
        if hit is not None:
            return hit
    return None


def check_root(root: str | os.PathLike | None) -> None:
    """An explicit data dir must exist (a typo should not silently fall back elsewhere)."""
    if root is not None and not Path(root).expanduser().is_dir():
        raise DatasetError(f"data dir {root} does not exist (or is not a folder)")


def not_found_error(name: str, root: str | os.PathLike | None = None) -> DatasetError:
    """The DatasetError raised when ``find_root`` finds nothing: where it looked, how to get it."""
    info = get_info(name)
    looked = ", ".join(str(p) for p in search_bases(info.name, root))
    return DatasetError(f"{info.name}: files not found (looked in {looked}); {info.how_to_get}")
