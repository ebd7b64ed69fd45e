"""The Ray executor's data cache tells subsets apart by their preprocessing: kappa_sweep
runs one context per centring fraction through one executor (measured: keyed by name and
seed alone, a Ray sweep trained α = 1's cells on α = 0's data)."""

from __future__ import annotations

import pytest
import torch

from engine.run.context import RunContext
from engine.run.spec import DataSpec, ExecutorSpec, RunSpec


def test_each_centring_fraction_gets_its_own_subset():
    pytest.importorskip("ray")
    from engine.run.executors.ray import RayExecutor

    ex = RayExecutor(ExecutorSpec(kind="ray"))

    class Store:  # stands in for the object store: put returns the object itself
        @staticmethod
        def put(obj):
            return obj

    ex.ray = Store()  # no Ray started
    data = DataSpec(name="digits", classes=(3, 8), n_train=100, n_test=20)
    got = [
        ex._dataset_ref(RunContext(RunSpec(data=data).replace(data__center_fraction=a)), 0)
        for a in (0.0, 1.0, 0.0)
    ]
    assert got[0] is got[2] and got[0] is not got[1]
    assert not torch.equal(got[0].x_train, got[1].x_train)
