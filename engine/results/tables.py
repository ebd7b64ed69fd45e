"""The tables of a run directory as typed rows: one frozen dataclass per CSV.

Each class's fields are its table's columns, in order (the public interface: docs/architecture.md#run-directory), and their annotations are the columns' types:

* ``str``: a label (model, dataset, attack, ridge rule, …), "" when missing;
* ``float``: a number, NaN when missing ("" in the CSV, None in an event);
* ``int | None``: an integer (an integral float or a numeric string is accepted), None
  when missing;
* ``bool | None``: a guard column, True/False, None when unknown (runs written before the
  guards existed have no such column: that is no damage).

``Row.from_row`` is the one parser of a table row, from an event's row (numbers, None)
or a CSV read back from disk (strings, ""), so a live run and a reopened one give the
same values; a value of the wrong kind raises ``RowError`` naming the column.
``to_row`` gives the dict the experiments emit and the store writes.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from engine.errors import EngineError

NAN = math.nan
BOOL_TEXT = {"": None, "true": True, "false": False, "1": True, "0": False}


class RowError(EngineError, ValueError):
    """A table cell of the wrong kind: ``flip_rates: n_flipped='x' is not an integer``."""

    def __init__(self, table: str, column: str, value: Any, what: str) -> None:
        self.table, self.column, self.value, self.what = table, column, value, what
        shown = value[:30] if isinstance(value, str) else value
        super().__init__(f"{table}: {column}={shown!r} is not {what}")


KIND_TEXT = {str: "text", float: "a number", int: "an integer", bool: "True or False"}

R = TypeVar("R", bound="Row")


def _kinds(cls: type) -> dict[str, type]:
    """Column → its base type (str, float, int or bool), read off the annotations."""
    out = {}
    for name, tp in typing.get_type_hints(cls).items():
        if name == "TABLE":
            continue
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        out[name] = args[0] if args else tp
    return out


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v.strip() == "")


def parse_cell(kind: type, v: Any) -> Any:
    """``v`` (an event value or CSV text) as ``kind``; raises ValueError when it is not one."""
    if kind is str:
        return "" if v is None else str(v)
    if kind is bool:
        if isinstance(v, bool) or v is None:
            return v
        key = str(v).strip().lower()
        if key not in BOOL_TEXT:
            raise ValueError
        return BOOL_TEXT[key]
    if _is_missing(v):
        return NAN if kind is float else None
    if isinstance(v, bool):
        raise ValueError
    f = float(v)  # ValueError for text
    if kind is float:
        return f
    if not (math.isfinite(f) and f.is_integer()):
        raise ValueError
    return int(f)


ADDED_LATER = frozenset(
    {
        "epochs_run",
        "stuck",
        "width_1d",
        "width_delta",
        "width_span",
        "adaptive_sharpness",
        "adaptive_rho",
        "n_dropped",
        "dropped",
    }
)
"""Columns added after runs were first written: a run from before them lacks them and is
read with the row type's default (None), not reported as damaged."""


@dataclass(frozen=True)
class Row:
    """Base of the table rows (``TABLE`` names the CSV, without ``.csv``)."""

    TABLE: ClassVar[str] = ""

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def kinds(cls) -> dict[str, type]:
        return _kinds(cls)

    @classmethod
    def from_row(cls: type[R], row: Mapping[str, Any]) -> R:
        """The typed row of a dict (event row or CSV row); a missing column is a missing
        value; a malformed one raises ``RowError`` naming the table and the column."""
        kwargs = {}
        for name, kind in _kinds(cls).items():
            v = row.get(name)
            try:
                kwargs[name] = parse_cell(kind, v)
            except (TypeError, ValueError):
                raise RowError(cls.TABLE, name, v, KIND_TEXT[kind]) from None
        return cls(**kwargs)

    def to_row(self) -> dict[str, Any]:
        """The row as the experiments emit it: column → value (NaN and None for missing)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class TrainRow(Row):
    TABLE: ClassVar[str] = "train"
    model: str = ""
    dataset: str = ""
    width: int | None = None
    seed: int | None = None
    training: str = ""
    epochs: int | None = None
    train_loss: float = NAN
    train_accuracy: float = NAN
    test_loss: float = NAN
    test_accuracy: float = NAN
    seconds: float = NAN
    converged: bool | None = None
    above_chance: bool | None = None
    stuck: bool | None = None
    """Stopped as stuck at its initial loss (``engine.train.until.stuck``): not converged."""
    epochs_run: int | None = None
    """Epochs the cell trained: ``epochs``, or where ``train.until = "converged"`` stopped it."""


@dataclass(frozen=True)
class NtkDistanceRow(Row):
    TABLE: ClassVar[str] = "ntk_distance"
    model: str = ""
    dataset: str = ""
    width: int | None = None
    seed: int | None = None
    ntk_distance: float = NAN
    ntk_distance_rel: float = NAN
    kernel_distance_init: float = NAN
    kernel_distance_final: float = NAN
    kernel_drift: float = NAN
    train_loss: float = NAN
    test_accuracy: float = NAN
    lin_distance: float = NAN
    lin_distance_rel: float = NAN
    lin_test_accuracy: float = NAN
    converged: bool | None = None
    above_chance: bool | None = None
    stuck: bool | None = None
    """Stopped as stuck at its initial loss (``engine.train.until.stuck``): not converged."""


@dataclass(frozen=True)
class SpectrumRow(Row):
    TABLE: ClassVar[str] = "spectrum"
    dataset: str = ""
    n: int | None = None
    d: int | None = None
    rank: int | None = None
    rtol: float = NAN
    kappa_G: float = NAN
    kappa_G_cubed: float = NAN
    kappa_G3_direct: float = NAN
    kappa_d: float = NAN
    width_threshold_v1: float = NAN
    width_threshold_v2: float = NAN


@dataclass(frozen=True)
class EigenvalueRow(Row):
    TABLE: ClassVar[str] = "eigenvalues"
    index: int | None = None
    eig_G: float = NAN
    eig_G3: float = NAN


@dataclass(frozen=True)
class FlipRateRow(Row):
    TABLE: ClassVar[str] = "flip_rates"
    model: str = ""
    dataset: str = ""
    attack: str = ""
    eps: float = NAN
    training: str = ""
    seed: int | None = None
    flip_rate: float = NAN
    spearman: float = NAN
    topk_overlap: float = NAN
    n_selected: int | None = None
    ridge: str = ""
    """The ridge and its rule, e.g. ``objective:0.5``."""
    ranking: str = ""
    n_flipped: int | None = None
    n_helpful: int | None = None
    flipped_helpful: int | None = None
    flipped_harmful: int | None = None
    converged: bool | None = None
    above_chance: bool | None = None
    stuck: bool | None = None
    """Stopped as stuck at its initial loss (``engine.train.until.stuck``): not converged."""


@dataclass(frozen=True)
class InfluenceCheckRow(Row):
    TABLE: ClassVar[str] = "influence_check"
    model: str = ""
    dataset: str = ""
    seed: int | None = None
    width: int | None = None
    n_train: int | None = None
    context: str = ""
    estimator: str = ""
    ridge: str = ""
    spearman: float = NAN
    spearman_p: float = NAN
    sign_agreement: float = NAN
    n_points: int | None = None
    seconds: float = NAN
    converged: bool | None = None
    above_chance: bool | None = None
    stuck: bool | None = None
    """Stopped as stuck at its initial loss (``engine.train.until.stuck``): not converged."""
    truth: str = "retrain"
    """The ground truth compared with: pbrf or retrain (rows written before the column
    existed read as empty and compared with retraining)."""
    truth_converged: bool | None = None
    """Rows against the PBRF: whether at least ``influence_check.pbrf_min_points`` of the
    removed points' solves met ``pbrf_tol`` (those points alone are compared, ``n_points``;
    None: retraining, or rows written before the column existed)."""
    n_dropped: int | None = 0
    """Rows against the PBRF: removed points left out of the statistic because their
    solve (the truth's or its floor's) missed ``pbrf_tol`` (0 against retraining, which
    leaves none out; None: rows written before the column existed)."""
    dropped: str = ""
    """Those points, "index: reason" joined by "; " (docs/protocol.md#influence)."""


@dataclass(frozen=True)
class LandscapeRow(Row):
    TABLE: ClassVar[str] = "landscape"
    model: str = ""
    direction: str = ""
    alpha: float = NAN
    beta: float = NAN
    loss: float = NAN


@dataclass(frozen=True)
class SharpnessRow(Row):
    TABLE: ClassVar[str] = "sharpness"
    model: str = ""
    seed: int | None = None
    hessian_top_eig: float = NAN
    hessian_trace: float = NAN
    width_1d: float = NAN
    """Claim 6's invariant measure: the length of the α-interval around the trained weights
    where the training loss along the seed's filter-normalised direction stays within
    ``width_delta`` of L(0) (``engine.landscape.curve_width``); NaN in runs before it."""
    width_delta: float = NAN
    width_censored: bool | None = None
    """True when the basin reaches the end of the widest grid scanned (``width_span``): a
    lower bound."""
    width_span: float = NAN
    """The span of the grid that measured ``width_1d``: ``landscape.span``, doubled while
    the basin reached its end (``engine.landscape.basin_width``); NaN in runs before it."""
    adaptive_sharpness: float = NAN
    """Claim 6's second invariant measure: the largest rise of the training loss over the
    adaptive ball ‖ε/|w|‖₂ ≤ ``adaptive_rho`` (Kwon et al. 2021;
    ``engine.landscape.adaptive_sharpness``; lower = flatter); NaN in runs before it."""
    adaptive_rho: float = NAN
    converged: bool | None = None
    above_chance: bool | None = None
    stuck: bool | None = None
    """Stopped as stuck at its initial loss (``engine.train.until.stuck``): not converged."""


@dataclass(frozen=True)
class AlignmentRow(Row):
    TABLE: ClassVar[str] = "alignment"
    dataset: str = ""
    kernel: str = ""
    target: str = ""
    ridge: float = NAN
    """The relative ridge ρ (absolute λ = ρ·tr(K)/n, ``engine.spectral.alignment``)."""
    alignment: float = NAN
    test_mse: float = NAN
    test_rel_mse: float = NAN
    train_mse: float = NAN
    test_accuracy: float = NAN
    n_train: int | None = None


@dataclass(frozen=True)
class NtkSpectrumRow(Row):
    TABLE: ClassVar[str] = "ntk_spectrum"
    dataset: str = ""
    kernel: str = ""
    n: int | None = None
    rank: int | None = None
    rtol: float = NAN
    kappa: float = NAN
    lambda_max: float = NAN
    lambda_min: float = NAN
    top10_share: float = NAN
    effective_rank: float = NAN
    eig_ratio_10: float = NAN
    eig_ratio_100: float = NAN
    decay_exponent: float = NAN


@dataclass(frozen=True)
class QkvDkRow(Row):
    """The d_k sweep of QKV-Attn at the largest width (``qkv.dk_sweep``, experiment ntk)."""

    TABLE: ClassVar[str] = "qkv_dk"
    model: str = ""
    dataset: str = ""
    width: int | None = None
    seed: int | None = None
    kernel_drift: float = NAN
    train_loss: float = NAN
    test_accuracy: float = NAN
    converged: bool | None = None
    above_chance: bool | None = None
    d_k: int | None = None


@dataclass(frozen=True)
class TrainabilityRow(Row):
    """Optimiser steps to the target loss (experiment ``trainability``); ``censored``: the
    cap was reached first (``steps_to_converge`` is then the cap)."""

    TABLE: ClassVar[str] = "trainability"
    dataset: str = ""
    kappa_G: float = NAN
    kappa_G3: float = NAN
    model: str = ""
    seed: int | None = None
    steps_to_converge: int | None = None
    censored: bool | None = None
    final_loss: float = NAN


@dataclass(frozen=True)
class KappaNtkRow(Row):
    """One network and its linearized twin at centring fraction ``alpha`` (``kappa_sweep``)."""

    TABLE: ClassVar[str] = "kappa_ntk"
    alpha: float = NAN
    model: str = ""
    dataset: str = ""
    width: int | None = None
    seed: int | None = None
    lin_distance_rel: float = NAN
    kernel_drift: float = NAN
    train_loss: float = NAN
    test_accuracy: float = NAN
    converged: bool | None = None
    above_chance: bool | None = None


@dataclass(frozen=True)
class KappaFlipRow(Row):
    """One seed's flip counts at centring fraction ``alpha`` (``kappa_sweep``)."""

    TABLE: ClassVar[str] = "kappa_flips"
    alpha: float = NAN
    model: str = ""
    dataset: str = ""
    attack: str = ""
    eps: float = NAN
    seed: int | None = None
    flip_rate: float = NAN
    n_flipped: int | None = None
    n_selected: int | None = None
    converged: bool | None = None
    above_chance: bool | None = None


@dataclass(frozen=True)
class KappaSweepRow(Row):
    """One (α, model) point of ``kappa_sweep``: the κ measured there and the effects;
    ``slope_ok`` / ``flip_ok`` False: a cell behind that effect (the ntk cells / the flip
    cells) failed a guard, and the effect at this point is left out of the fits."""

    TABLE: ClassVar[str] = "kappa_sweep"
    alpha: float = NAN
    dataset: str = ""
    model: str = ""
    rank: int | None = None
    kappa_G: float = NAN
    kappa_d: float = NAN
    kappa_G_cubed: float = NAN
    kappa_G3_direct: float = NAN
    lin_slope: float = NAN
    lin_slope_low: float = NAN
    lin_slope_high: float = NAN
    flip_rate: float = NAN
    flip_low: float = NAN
    flip_high: float = NAN
    flip_ratio: float = NAN
    cells: int | None = None
    failed_cells: int | None = None
    slope_ok: bool | None = None
    flip_ok: bool | None = None


ROW_TYPES: tuple[type[Row], ...] = (
    KappaNtkRow,
    KappaFlipRow,
    KappaSweepRow,
    TrainabilityRow,
    NtkDistanceRow,
    SpectrumRow,
    EigenvalueRow,
    FlipRateRow,
    InfluenceCheckRow,
    LandscapeRow,
    SharpnessRow,
    AlignmentRow,
    NtkSpectrumRow,
    QkvDkRow,
    TrainRow,
)
TABLES: dict[str, type[Row]] = {cls.TABLE: cls for cls in ROW_TYPES}
"""Table name → its row type (every CSV of a run directory)."""


def typed_rows(table: str, rows: Iterable[Mapping[str, Any]]) -> list[Row]:
    """``rows`` of ``table`` as its row type (``TABLES[table].from_row`` each)."""
    t = TABLES[table]
    return [t.from_row(r) for r in rows]
