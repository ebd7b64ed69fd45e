"""``reproduce --scale data`` fits one sitting: its FLOP floor at the idle 2-core probe,
times the fused trainer's overhead, stays within 60 min per data set and protocol."""

from __future__ import annotations

import pytest

from engine.errors import ConfigError
from engine.experiments.estimate import breakdown
from engine.reproduce.plan import plan
from engine.reproduce.presets import FUSED_OVERHEAD, IDLE_FLOPS, SCALE_BUDGET_S


@pytest.mark.parametrize("dataset", ["mnist", "fashion-mnist", "cifar10", "digits"])
def test_data_scale_fits_an_hour_per_data_set_and_protocol(dataset: str) -> None:
    parts = plan((dataset,), scale="data")
    assert {p.protocol for p in parts} == {"paper", "centred"}
    for proto in ("paper", "centred"):
        mine = [(p.key, p.spec) for p in parts if p.protocol == proto]
        floor = sum(ln.floor_s for ln in breakdown(mine, flops_per_s=IDLE_FLOPS, step_s=0.0))
        assert 0 < FUSED_OVERHEAD * floor <= SCALE_BUDGET_S, (dataset, proto, floor)
    spec = parts[0].spec
    assert spec.model.widths == (16, 64, 256, 1024, 4096) and spec.seeds == (0, 1, 2)
    assert spec.train.until == "converged"


def test_scale_takes_user_overrides_and_refuses_quick() -> None:
    parts = plan(("mnist",), scale="data", overrides={"model__widths": (16, 64)})
    assert parts[0].spec.model.widths == (16, 64) and parts[0].spec.data.n_train == 800
    with pytest.raises(ConfigError, match="scale"):
        plan(("mnist",), scale="data", quick=True)
    with pytest.raises(ConfigError, match="data"):
        plan(("mnist",), scale="huge")
