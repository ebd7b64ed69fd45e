"""The ``ntk``, ``spectrum``, ``landscape`` and ``trainability`` sections of a run spec: what is measured on the trained networks (docs/protocol.md#defaults)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.kinds import (
    PREDICTORS,
    Predictor,
)
from engine.ridge import check_ridge_rule
from engine.run.spec.checks import (
    MAX_STEP,
    MAX_WIDTH,
    _check,
    _nonneg_float,
    _pos_float,
    _pos_int,
    _width,
)

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class NTKSpec:
    """NTK predictor and distances (docs/protocol.md#ntk)."""

    lam: float = 1e-3
    """Ridge of f_NTK when ridge = "lambda" (the earlier default)."""
    ridge: str | float = "objective"
    """Ridge of f_NTK: objective (nλ/2 from the training L2 λ, docs/protocol.md#evidence), lambda (ntk.lam) or a number."""
    predictor: Predictor = "ridge"
    """ridge (kernel ridge regression) or flow (gradient flow to time flow_time, MSE)."""
    flow_time: float = 1000.0
    """Gradient-flow time t for predictor=flow."""
    compare: str = "logits"
    """Multiclass: compare f_NTK (one-hot ridge) with the network's logits or its softmax probabilities."""
    drift_every: int = 10
    """Record the kernel drift ‖Θ_t − Θ_0‖_F/‖Θ_0‖_F every this many epochs (0: off)."""
    drift_points: int = 256
    """Training points used for the drift kernel (a fixed seeded probe subset)."""

    def __post_init__(self) -> None:
        _check(_pos_float(self.lam), "ntk.lam", self.lam, "a positive number")
        object.__setattr__(self, "ridge", check_ridge_rule(self.ridge, "ntk.ridge"))
        _check(self.predictor in PREDICTORS, "ntk.predictor", self.predictor, "ridge or flow")
        _check(
            self.compare in ("logits", "probabilities"),
            "ntk.compare",
            self.compare,
            "logits or probabilities",
        )
        _check(_pos_float(self.flow_time), "ntk.flow_time", self.flow_time, "a positive number")
        _check(
            isinstance(self.drift_every, int) and self.drift_every >= 0,
            "ntk.drift_every",
            self.drift_every,
            "an integer ≥ 0",
        )
        _check(
            _pos_int(self.drift_points), "ntk.drift_points", self.drift_points, "a positive integer"
        )


@dataclass(frozen=True)
class SpectrumSpec:
    """Gram spectra and condition numbers (docs/protocol.md#spectra)."""

    rtol: float | None = None
    """Eigenvalue tolerance relative to λ_max for the numerical rank (None: (max(n, d)·eps)², i.e. σ > max(n, d)·eps·σ_max)."""
    datasets: tuple[str, ...] = ()
    """Extra data sets to compare in the same run (e.g. mnist,cifar10)."""

    def __post_init__(self) -> None:
        if self.rtol is not None:
            _check(
                _pos_float(self.rtol) and self.rtol < 1,
                "spectrum.rtol",
                self.rtol,
                "a number in (0, 1), e.g. 1e-10",
            )
        datasets = tuple(self.datasets)
        _check(
            all(isinstance(n, str) and n for n in datasets) and len(set(datasets)) == len(datasets),
            "spectrum.datasets",
            self.datasets,
            "distinct data set names, e.g. mnist,cifar10",
        )
        object.__setattr__(self, "datasets", datasets)


@dataclass(frozen=True)
class LandscapeSpec:
    """Loss landscape and sharpness (docs/protocol.md#landscape)."""

    width: int = 1024
    """Width of the networks whose landscape is measured (ours)."""
    points_1d: int = 41
    """Points of the 1-D curves."""
    points_2d: int = 21
    """Points per axis of the 2-D surface."""
    span: float = 1.0
    """α, β range [−span, span] in filter-normalised units."""
    split: str = "train"
    """Loss evaluated on train, test or both."""
    hessian_iters: int = 100
    """Iteration cap of power iteration / Lanczos."""
    hessian_tol: float = 1e-4
    """Relative convergence tolerance of the top eigenvalue."""
    hutchinson_samples: int = 100
    """Rademacher probes of Hutchinson's trace estimate."""

    def __post_init__(self) -> None:
        _check(
            _width(self.width),
            "landscape.width",
            self.width,
            f"a positive integer up to {MAX_WIDTH}",
        )
        _check(
            _pos_int(self.points_1d) and self.points_1d >= 3,
            "landscape.points_1d",
            self.points_1d,
            "an integer ≥ 3",
        )
        _check(
            _pos_int(self.points_2d) and self.points_2d >= 3,
            "landscape.points_2d",
            self.points_2d,
            "an integer ≥ 3",
        )
        _check(
            _pos_float(self.span) and self.span <= MAX_STEP,
            "landscape.span",
            self.span,
            f"a positive number up to {MAX_STEP:g}",
        )
        _check(
            self.split in ("train", "test", "both"),
            "landscape.split",
            self.split,
            "train, test or both",
        )
        _check(
            _pos_int(self.hessian_iters),
            "landscape.hessian_iters",
            self.hessian_iters,
            "a positive integer",
        )
        _check(
            _pos_float(self.hessian_tol),
            "landscape.hessian_tol",
            self.hessian_tol,
            "a positive number",
        )
        _check(
            _pos_int(self.hutchinson_samples),
            "landscape.hutchinson_samples",
            self.hutchinson_samples,
            "a positive integer",
        )


TRAINABILITY_KAPPAS = tuple(float(f"{10 ** (1 + k / 2):.4g}") for k in range(11))  # 10 … 1e6


@dataclass(frozen=True)
class TrainabilitySpec:
    """Trainability vs κ (experiment ``trainability``): optimiser steps to a target loss on
    synthetic data with a prescribed Gram spectrum, and on the run's data set (ours)."""

    kappas: tuple[float, ...] = TRAINABILITY_KAPPAS
    """Prescribed κ(G) of the synthetic sweep (default 10 … 1e6, two points a decade)."""
    n: int = 64
    """Synthetic training points (= the rank of G; n ≤ d keeps G full rank)."""
    d: int = 64
    """Synthetic input dimension."""
    width: int = 256
    """Width of the networks trained."""
    target: float = 0.01
    """A cell has converged when its epoch-mean training loss ≤ target × the constant predictor's loss."""
    max_steps: int = 20000
    """The cap on optimiser steps; a cell that reaches it is censored."""
    l2: float = 0.0
    """L2 penalty of these runs (0: a ridge would bound which directions can be fit at all, another effect)."""

    def __post_init__(self) -> None:
        ks = tuple(float(k) for k in self.kappas)
        _check(
            len(ks) >= 2 and all(math.isfinite(k) and 1 <= k <= 1e12 for k in ks),
            "trainability.kappas",
            self.kappas,
            "two or more numbers in [1, 1e12], e.g. 10,100,1000",
        )
        object.__setattr__(self, "kappas", tuple(sorted(set(ks))))
        _check(_pos_int(self.n) and self.n >= 2, "trainability.n", self.n, "an integer ≥ 2")
        _check(_pos_int(self.d), "trainability.d", self.d, "a positive integer")
        _check(_pos_int(self.width), "trainability.width", self.width, "a positive integer")
        _check(
            _pos_float(self.target) and self.target < 1,
            "trainability.target",
            self.target,
            "a number in (0, 1)",
        )
        _check(
            _pos_int(self.max_steps) and self.max_steps <= 10**7,
            "trainability.max_steps",
            self.max_steps,
            "a positive integer up to 10000000",
        )
        _check(_nonneg_float(self.l2), "trainability.l2", self.l2, "a number ≥ 0")
