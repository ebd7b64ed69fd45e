"""The tiny trainability run the tests share: three κ on a 16-point synthetic Gram, digits
3 vs 8 (40 / 10 points) as the real data set, width 16, target loss 0.2."""

from __future__ import annotations

from typing import Any

from engine.run.spec import RunSpec


def tiny_trainability_spec(seeds: tuple[int, ...], max_steps: int, **spec: Any) -> RunSpec:
    """``spec``: more RunSpec fields (``device``, ``dtype``)."""
    return RunSpec(experiment="trainability", seeds=seeds, **{"device": "cpu", **spec}).replace(
        data__classes=(3, 8),
        data__n_train=40,
        data__n_test=10,
        trainability__kappas=(10.0, 100.0, 1000.0),
        trainability__n=16,
        trainability__d=16,
        trainability__width=16,
        trainability__target=0.2,
        trainability__max_steps=max_steps,
        train__lr=1e-2,
    )
