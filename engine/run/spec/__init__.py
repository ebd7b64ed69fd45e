"""Typed run specifications: frozen dataclasses, validated, TOML round-trip.

Every default below is documented in the docs/protocol.md#defaults; the
paper's own settings are marked "paper", our choices where it is silent "ours".
"""

from __future__ import annotations

import dataclasses
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.run.spec.checks import (
    DEFAULT_WIDTHS,
    MAX_CONFIG_BYTES,
    MAX_EPOCHS,
    MAX_NOTE_CHARS,
    MAX_SEED,
    MAX_STEP,
    MAX_WIDTH,
    _check,
)
from engine.run.spec.codec import _from_dict, _texts, _to_plain, _utf8, dumps_toml
from engine.run.spec.data import DataSpec
from engine.run.spec.influence import FlipSpec, InfluenceCheckSpec
from engine.run.spec.kappa import KappaSpec
from engine.run.spec.measures import (
    TRAINABILITY_KAPPAS,
    LandscapeSpec,
    NTKSpec,
    SpectrumSpec,
    TrainabilitySpec,
)
from engine.run.spec.training import ExecutorSpec, ModelSpec, QKVSpec, TrainSpec

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = [
    "DEFAULT_WIDTHS",
    "MAX_CONFIG_BYTES",
    "MAX_EPOCHS",
    "MAX_NOTE_CHARS",
    "MAX_SEED",
    "MAX_STEP",
    "MAX_WIDTH",
    "SECTIONS",
    "TRAINABILITY_KAPPAS",
    "DataSpec",
    "ExecutorSpec",
    "FlipSpec",
    "InfluenceCheckSpec",
    "KappaSpec",
    "LandscapeSpec",
    "ModelSpec",
    "NTKSpec",
    "QKVSpec",
    "RunSpec",
    "SpectrumSpec",
    "TrainSpec",
    "TrainabilitySpec",
]


@dataclass(frozen=True)
class RunSpec:
    """One run: which experiments on which data, with which models and options."""

    experiment: str = "all"
    """An experiment name (see ``malleability headless --help``) or all."""
    data: DataSpec = field(default_factory=DataSpec)
    model: ModelSpec = field(default_factory=ModelSpec)
    train: TrainSpec = field(default_factory=TrainSpec)
    ntk: NTKSpec = field(default_factory=NTKSpec)
    spectrum: SpectrumSpec = field(default_factory=SpectrumSpec)
    flip: FlipSpec = field(default_factory=FlipSpec)
    influence_check: InfluenceCheckSpec = field(default_factory=InfluenceCheckSpec)
    landscape: LandscapeSpec = field(default_factory=LandscapeSpec)
    trainability: TrainabilitySpec = field(default_factory=TrainabilitySpec)
    kappa: KappaSpec = field(default_factory=KappaSpec)
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)
    qkv: QKVSpec = field(default_factory=QKVSpec)
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds (ours: 3); each seeds the subset draw, the init and the batch order."""
    device: str = "auto"
    """auto (CUDA when present), cpu or cuda."""
    dtype: str = "float32"
    """float32 or float64 for training and kernels."""
    quick: bool = False
    """Whether the --quick preset was applied (recorded for the report)."""
    note: str = ""
    """One line a run prints before it starts: what its config knows some cells cannot do, and why ('' for none)."""

    def __post_init__(self) -> None:
        _check(
            isinstance(self.experiment, str) and bool(self.experiment),
            "experiment",
            self.experiment,
            "an experiment name or all",
        )
        names = [n.strip() for n in self.experiment.split(",")]
        twice = sorted({n for n in names if names.count(n) > 1})
        _check(
            not twice,
            "experiment",
            self.experiment,
            f"each experiment once ({', '.join(twice)} is repeated)",
        )
        _check(
            isinstance(self.note, str)
            and len(self.note) <= MAX_NOTE_CHARS
            and not any(unicodedata.category(c) == "Cc" for c in self.note),
            "note",
            self.note,
            f"one line of text, up to {MAX_NOTE_CHARS} characters, without control characters "
            "(ESC, BEL, NUL, CR, a newline: they would reach the terminal raw)",
        )
        seeds = tuple(self.seeds)
        _check(
            len(seeds) >= 1
            and all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED for s in seeds
            )
            and len(set(seeds)) == len(seeds),
            "seeds",
            self.seeds,
            f"distinct integers from 0 to {MAX_SEED}, e.g. 0,1,2",
        )
        object.__setattr__(self, "seeds", seeds)
        _check(
            isinstance(self.device, str)
            and (self.device in ("auto", "cpu") or self.device.startswith("cuda")),
            "device",
            self.device,
            "auto, cpu or cuda",
        )
        _check(self.dtype in ("float32", "float64"), "dtype", self.dtype, "float32 or float64")
        _check(
            not (self.data.centring > 0 and "qkv" in self.model.kinds),
            "data.center_fraction" if self.data.center_fraction else "data.center",
            self.data.center_fraction or True,
            "false while QKV-Attn is among the models (centring is supported for relu and attn)",
        )
        self.data.check_source_fields((self.data.name, *self.spectrum.datasets))
        for name, text in _texts(self.to_dict()):
            _check(
                _utf8(text),
                name,
                text,
                "text in UTF-8 (this holds bytes that are not: a name in another encoding?); "
                "spec.toml could not hold it",
            )

    # -- serialisation ---------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (tuples become lists, None values are dropped)."""
        return _to_plain(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSpec:
        """Inverse of ``to_dict``; unknown keys raise ``ConfigError``."""
        return _from_dict(cls, d, "", SECTIONS)

    def to_toml(self) -> str:
        return dumps_toml(self.to_dict())

    @classmethod
    def from_toml(cls, text: str) -> RunSpec:
        text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark is not a statement
        try:
            d = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError("config", "TOML", f"valid TOML ({e})") from None
        except RecursionError:
            raise ConfigError(
                "config", "TOML", "TOML nested a few levels deep, not hundreds"
            ) from None
        return cls.from_dict(d)

    @classmethod
    def load(cls, path: str | Path) -> RunSpec:
        """Read a spec file; every error names the file (one line)."""
        from engine.files import FileRefused, read_small_text

        p = Path(path)
        try:
            text = read_small_text(p, MAX_CONFIG_BYTES)
        except FileRefused as e:
            raise ConfigError(
                "config",
                str(p),
                f"a regular TOML file of at most {MAX_CONFIG_BYTES >> 20} MiB (this is {e})",
            ) from None
        except UnicodeDecodeError:
            raise ConfigError("config", str(p), "a UTF-8 TOML file (this one is binary)") from None
        except OSError as e:
            raise ConfigError("config", str(p), f"a readable TOML file ({e.strerror})") from None
        try:
            return cls.from_toml(text)
        except ConfigError as e:
            raise ConfigError(e.field, e.value, e.allowed, where=str(p)) from None

    def save(self, path: str | Path) -> None:
        """Write the spec as TOML (atomically: a temp file beside it, then a rename)."""
        from engine.run.paths import atomic_write

        atomic_write(Path(path), self.to_toml())

    def replace(self, **changes: Any) -> RunSpec:
        """Copy with top-level fields or ``section__field`` keys replaced."""
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        for k, v in changes.items():
            if "__" in k:
                sec, f = k.split("__", 1)
                nested.setdefault(sec, {})[f] = v
            else:
                top[k] = v
        for sec, vals in nested.items():
            top[sec] = dataclasses.replace(top.get(sec, getattr(self, sec)), **vals)
        return dataclasses.replace(self, **top)


SECTIONS = {
    "data": DataSpec,
    "model": ModelSpec,
    "train": TrainSpec,
    "ntk": NTKSpec,
    "spectrum": SpectrumSpec,
    "flip": FlipSpec,
    "influence_check": InfluenceCheckSpec,
    "landscape": LandscapeSpec,
    "trainability": TrainabilitySpec,
    "kappa": KappaSpec,
    "executor": ExecutorSpec,
    "qkv": QKVSpec,
}
