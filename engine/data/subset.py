"""Seeded, class-balanced, disjoint train/test subsets and the docs/protocol.md#preprocessing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.data.dataset import Dataset
from engine.data.raw import RawData
from engine.errors import ConfigError, DatasetError

# Streams of the seed's SeedSequence: each (split, class) draw has its own stream, so the
# train subset does not change when only n_test changes (and vice versa).
_TRAIN, _TEST, _CARVE, _ORDER_TRAIN, _ORDER_TEST = range(5)


def balanced_counts(n: int, k: int) -> list[int]:
    """n examples over k classes: n // k each, the remainder to the first n % k classes."""
    base, rem = divmod(n, k)
    return [base + (1 if j < rem else 0) for j in range(k)]


@dataclass(frozen=True)
class ClassCounts:
    """Images per class label in each split of a data set: what a subset can draw from.

    Small (a few integers), so a front end can check a subset as the user types it.
    """

    name: str
    class_names: tuple[str, ...]
    splits: dict[str, tuple[int, ...]]
    """Split ("train", "test" or "all") → images of each label 0..K-1."""
    origins: dict[str, str]
    """Split → where it came from (for messages)."""


def class_counts(raw: RawData) -> ClassCounts:
    """The ``ClassCounts`` of ``raw``."""
    k = len(raw.class_names)
    return ClassCounts(
        name=raw.name,
        class_names=tuple(raw.class_names),
        splits={
            name: tuple(int(c) for c in np.bincount(sp.labels.astype(np.int64), minlength=k)[:k])
            for name, sp in raw.splits.items()
        },
        origins={name: sp.origin for name, sp in raw.splits.items()},
    )


def subset_problem(
    counts: ClassCounts, classes: Sequence[int] | None, n_train: int, n_test: int
) -> tuple[str, str] | None:
    """Why this subset cannot be drawn, as (field, message), or None when it can.

    The loader's rule (``build_dataset`` raises the message as a DatasetError): every class
    label exists, each class gets at least one train and one test image, and each class
    has its balanced share (``balanced_counts``) of n_train and n_test in its split (both
    from the one split when there is only one). ``field`` is ``classes``, ``n_train`` or
    ``n_test``, so a form can show the message under the field to change.
    """
    k_all = len(counts.class_names)
    cl = tuple(range(k_all)) if classes is None else tuple(int(c) for c in classes)
    bad = [c for c in cl if not 0 <= c < k_all]
    if bad:
        names = ", ".join(f"{i} ({n})" for i, n in enumerate(counts.class_names))
        return "classes", f"{counts.name}: no class {bad[0]}; valid classes are {names}"
    k = len(cl)
    for n, fld in ((n_train, "n_train"), (n_test, "n_test")):
        if n < k:
            return (
                fld,
                f"{counts.name}: {fld}={n} is smaller than the {k} classes; each class needs one",
            )
    c_tr, c_te = balanced_counts(n_train, k), balanced_counts(n_test, k)

    def short(c: int, have: int, where: str, asked: str) -> str:
        return (
            f"{counts.name}: class {c} ({counts.class_names[c]}) has {have} images in {where}, "
            f"{asked} asked; lower n_train / n_test"
        )

    if "train" in counts.splits and "test" in counts.splits:
        for j, c in enumerate(cl):
            for split, need, fld in (("train", c_tr[j], "n_train"), ("test", c_te[j], "n_test")):
                have = counts.splits[split][c]
                if need > have:
                    return fld, short(
                        c, have, f"the {split} split ({counts.origins[split]})", str(need)
                    )
        return None
    (only,) = counts.splits
    for j, c in enumerate(cl):
        have, need = counts.splits[only][c], c_tr[j] + c_te[j]
        if need > have:
            fld = "n_train" if c_tr[j] >= c_te[j] else "n_test"
            where = f"{counts.origins[only]} (the only split)"
            return fld, short(c, have, where, f"{c_tr[j]} train + {c_te[j]} test = {need}")
    return None


def resolve_classes(raw: RawData, classes: Sequence[int] | None) -> tuple[int, ...]:
    """The class labels to keep (their form; ``subset_problem`` checks them against ``raw``)."""
    valid = tuple(range(len(raw.class_names)))
    if classes is None:
        return valid
    try:
        cl = tuple(int(c) for c in classes)
    except (TypeError, ValueError):
        raise ConfigError("classes", classes, "integer class labels, e.g. (3, 8)") from None
    if len(cl) < 2 or len(set(cl)) != len(cl):
        raise ConfigError("classes", classes, "two or more distinct class labels, e.g. (3, 8)")
    return cl  # labels the data set lacks: select_indices (subset_problem) names them


def _rng(seed: int, *stream: int) -> np.random.Generator:
    return np.random.default_rng([seed, *stream])


def select_indices(
    raw: RawData, classes: tuple[int, ...], n_train: int, n_test: int, seed: int
) -> tuple[str, np.ndarray, str, np.ndarray, str | None]:
    """Pick the subset: (train split, train indices, test split, test indices, note).

    With both official splits, train comes from "train" and test from "test". With one
    split only, both are carved from it: per class one seeded permutation, train from its
    front and test from its back, so they are disjoint.
    """
    for n, fld in ((n_train, "n_train"), (n_test, "n_test")):
        if not (isinstance(n, (int, np.integer)) and n >= 1):
            raise ConfigError(fld, n, "a positive integer")
    if not (isinstance(seed, (int, np.integer)) and seed >= 0):
        raise ConfigError("seed", seed, "a non-negative integer")
    problem = subset_problem(class_counts(raw), classes, int(n_train), int(n_test))
    if problem is not None:
        raise DatasetError(problem[1])
    k = len(classes)
    c_tr, c_te = balanced_counts(n_train, k), balanced_counts(n_test, k)
    tr_idx: list[np.ndarray] = []
    te_idx: list[np.ndarray] = []
    note = None
    if "train" in raw.splits and "test" in raw.splits:
        tr_split, te_split = "train", "test"
        for j, c in enumerate(classes):
            for split, need, stream, out in (
                ("train", c_tr[j], _TRAIN, tr_idx),
                ("test", c_te[j], _TEST, te_idx),
            ):
                pool = np.flatnonzero(raw.splits[split].labels == c)
                out.append(_rng(seed, stream, c).permutation(pool)[:need])
    else:
        (only,) = raw.splits
        tr_split = te_split = only
        s = raw.splits[only]
        for j, c in enumerate(classes):
            pool = np.flatnonzero(s.labels == c)
            perm = _rng(seed, _CARVE, c).permutation(pool)
            tr_idx.append(perm[: c_tr[j]])
            te_idx.append(perm[perm.size - c_te[j] :])
        if only == "all":
            note = f"{raw.name}: one split only ({s.origin}, {s.size} images)"
        else:
            note = f"{raw.name}: only the {only} split ({s.origin}, {s.size} images) found in {raw.source}"
        note += "; train and test subsets are disjoint seeded draws from it"
    tr = np.concatenate(tr_idx)
    te = np.concatenate(te_idx)
    # interleave the classes (a seeded shuffle) rather than leaving them in blocks
    tr = tr[_rng(seed, _ORDER_TRAIN).permutation(tr.size)]
    te = te[_rng(seed, _ORDER_TEST).permutation(te.size)]
    return tr_split, tr, te_split, te, note


def _pixels(images: np.ndarray, scale: float) -> np.ndarray:
    x = images.reshape(images.shape[0], -1).astype(np.float64) / scale
    return np.clip(x, 0.0, 1.0)


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Each row of ``x`` [n, d] scaled to unit ℓ2 norm; all-zero rows stay zero."""
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def build_dataset(
    raw: RawData,
    *,
    classes: Sequence[int] | None,
    n_train: int,
    n_test: int,
    seed: int,
    center: bool | float = False,
) -> Dataset:
    """The Dataset record for one seeded subset of ``raw`` (docs/protocol.md#preprocessing;
    ``center``: minus the training subset's per-pixel mean before the unit-norm scaling;
    a number α in [0, 1]: minus α × that mean, True meaning exactly 1 and 0 the paper's).

    x_*_raw [n, d]: flattened pixels in [0, 1]; x_* [n, d]: the same rows at unit ℓ2 norm;
    float64 CPU tensors. Two classes → task "binary", y ±1 (first class +1); more → task
    "multiclass", y int64 0..K-1 in the order of ``classes``.
    """
    import torch  # here, not at import: reading a data set's counts needs no tensor

    cl = resolve_classes(raw, classes)
    tr_split, tr, te_split, te, note = select_indices(raw, cl, n_train, n_test, seed)
    s_tr, s_te = raw.splits[tr_split], raw.splits[te_split]
    xr_tr, xr_te = _pixels(s_tr.images[tr], raw.scale), _pixels(s_te.images[te], raw.scale)
    lab_tr, lab_te = s_tr.labels[tr].astype(np.int64), s_te.labels[te].astype(np.int64)
    pos = {c: j for j, c in enumerate(cl)}
    if len(cl) == 2:
        task = "binary"
        y_tr = torch.from_numpy(np.where(lab_tr == cl[0], 1.0, -1.0))
        y_te = torch.from_numpy(np.where(lab_te == cl[0], 1.0, -1.0))
    else:
        task = "multiclass"
        y_tr = torch.from_numpy(np.array([pos[int(v)] for v in lab_tr], dtype=np.int64))
        y_te = torch.from_numpy(np.array([pos[int(v)] for v in lab_te], dtype=np.int64))
    notes = tuple(raw.notes) + ((note,) if note else ())
    alpha = float(center)
    if not 0.0 <= alpha <= 1.0:  # also NaN
        raise ValueError(f"center fraction {center!r}: a number from 0 to 1")
    mean = xr_tr.mean(axis=0) if alpha else np.zeros(xr_tr.shape[1])
    if 0.0 < alpha < 1.0:  # 1 keeps the mean itself (bitwise the centred protocol)
        mean = alpha * mean
    return Dataset(
        name=raw.name,
        x_train=torch.from_numpy(unit_rows(xr_tr - mean)),
        y_train=y_tr,
        x_test=torch.from_numpy(unit_rows(xr_te - mean)),
        y_test=y_te,
        x_train_raw=torch.from_numpy(xr_tr),
        x_test_raw=torch.from_numpy(xr_te),
        labels_train=lab_tr,
        labels_test=lab_te,
        classes=cl,
        class_names=tuple(raw.class_names[c] for c in cl),
        task=task,
        image_shape=tuple(raw.image_shape),
        source=raw.source,
        notes=notes,
        pixel_mean=torch.from_numpy(mean) if alpha else None,
    )
