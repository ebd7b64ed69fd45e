"""The ``data`` section of a run spec: which images, how many, how prepared (docs/protocol.md#defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.run.spec.checks import (
    _check,
    _pos_int,
)

if TYPE_CHECKING:
    from engine.data.sources import SourceOptions


@dataclass(frozen=True)
class DataSpec:
    """Which data set and which subset of it."""

    name: str = "digits"
    """Data set name (see ``malleability data list``)."""
    data_dir: str | None = None
    """Folder holding the files; else $MALLEABILITY_DATA, then the user data dir."""
    classes: tuple[int, ...] | None = None
    """Class labels to keep; two classes → binary task with ±1 targets (MSE). None: all."""
    n_train: int = 1000
    """Training examples, class-balanced (ours; the paper does not say)."""
    n_test: int = 200
    """Test examples, class-balanced (ours)."""
    transductive: bool = False
    """Include the test points in the attention context C (default: training set only)."""
    center: bool = False
    """Subtract the training set's per-pixel mean before the unit-norm scaling, for train, test and attacked inputs (paper: false)."""
    center_fraction: float | None = None
    """Centring as a knob: subtract α × the training set's per-pixel mean (0: the paper's preprocessing, 1: ``center``); unset: ``center`` decides (docs/protocol.md#preprocessing)."""
    image_size: int | None = None
    """folder: / hf: sources: resize every image to this side (square); unset: as found, all alike."""
    mode: str | None = None
    """folder: / hf: sources: Pillow mode L (grey) or RGB; unset: as found, all alike."""
    image_column: str | None = None
    """hf: sources: the image column (unset: image, else img)."""
    label_column: str = "label"
    """hf: sources: the label column."""

    def __post_init__(self) -> None:
        _check(
            isinstance(self.name, str) and bool(self.name),
            "data.name",
            self.name,
            "a data set name",
        )
        from engine.data.sources import is_source, source_problem

        if ":" in self.name and (not is_source(self.name) or source_problem(self.name)):
            _check(
                False, "data.name", self.name, "a data set name, or npz:FILE, folder:DIR, hf:DIR"
            )
        _check(
            self.image_size is None or (_pos_int(self.image_size) and self.image_size <= 4096),
            "data.image_size",
            self.image_size,
            "a positive integer up to 4096 (pixels a side), or unset",
        )
        _check(self.mode in (None, "L", "RGB"), "data.mode", self.mode, "L, RGB, or unset")
        for fld in ("image_column", "label_column"):
            v = getattr(self, fld)
            _check(
                v is None and fld == "image_column" or (isinstance(v, str) and bool(v.strip())),
                f"data.{fld}",
                v,
                "a column name",
            )
        _check(
            _pos_int(self.n_train) and self.n_train >= 2,
            "data.n_train",
            self.n_train,
            "an integer ≥ 2",
        )
        _check(_pos_int(self.n_test), "data.n_test", self.n_test, "a positive integer")
        fr = self.center_fraction
        _check(
            fr is None
            or (isinstance(fr, (int, float)) and not isinstance(fr, bool) and 0 <= fr <= 1),
            "data.center_fraction",
            fr,
            "a number from 0 (the paper's preprocessing) to 1 (centred), or unset",
        )
        _check(
            not (self.center and fr is not None and fr != 1),
            "data.center_fraction",
            fr,
            "1 or unset while data.center is true (--center means a fraction of 1)",
        )
        if self.classes is not None:
            cl = tuple(self.classes)
            _check(
                len(cl) >= 2
                and all(isinstance(c, int) and c >= 0 for c in cl)
                and len(set(cl)) == len(cl),
                "data.classes",
                self.classes,
                "two or more distinct non-negative class labels, e.g. 3,8",
            )
            object.__setattr__(self, "classes", cl)

    @property
    def centring(self) -> float:
        """α, the share of the training set's per-pixel mean subtracted before the unit-norm
        scaling: ``center_fraction`` when set, else 1.0 with ``center`` and 0.0 without."""
        if self.center_fraction is not None:
            return float(self.center_fraction)
        return 1.0 if self.center else 0.0

    def check_source_fields(self, names: tuple[str, ...]) -> None:
        """ConfigError when a source field is set but no data set in ``names`` (data.name
        and spectrum.datasets) reads it: a built-in's images and an npz:'s arrays are used
        as stored, so ``image_size`` / ``mode`` would be recorded in spec.toml yet ignored
        (the spec must say what ran); the columns are read by hf: sources only."""
        from engine.data.sources import is_source, parse_source, source_problem

        kinds = {parse_source(n).kind for n in names if is_source(n) and not source_problem(n)}
        for fld, unset, readers in (
            ("image_size", None, ("folder", "hf")),
            ("mode", None, ("folder", "hf")),
            ("image_column", None, ("hf",)),
            ("label_column", "label", ("hf",)),
        ):
            value = getattr(self, fld)
            if value != unset and not kinds & set(readers):
                _check(
                    False,
                    f"data.{fld}",
                    value,
                    f"set only for {' and '.join(k + ':' for k in readers)} sources "
                    f"({', '.join(names)} {'is' if len(names) == 1 else 'are'} used as stored)",
                )

    def source_options(self) -> SourceOptions:
        """The options a data source (npz:/folder:/hf:) is read with."""
        from engine.data.sources import SourceOptions

        return SourceOptions(self.image_size, self.mode, self.image_column, self.label_column)
