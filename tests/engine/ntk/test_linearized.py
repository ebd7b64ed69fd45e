"""The linearized twin: known answers (a linear model is its own twin), the closed form
against torch.func.jvp, and the lazy limit (twin and network agree at large width)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from engine.errors import ConfigError
from engine.experiments.ntk import lin_distances
from engine.models import build_model
from engine.ntk.linearized import Linearized
from engine.run.context import batch_seed
from engine.run.spec import TrainSpec
from engine.train import train


def _data(n: int = 40, d: int = 12, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g, dtype=torch.float64)
    y = torch.where(x[:, 0] > x[:, 1], 1.0, -1.0).to(torch.float64)
    return x, y


def _fit(model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: TrainSpec, seed: int = 3) -> None:
    for _ in train(model, x, y, cfg, generator=torch.Generator().manual_seed(seed)):
        pass


@pytest.mark.parametrize("optimizer", ["adam", "sgd", "gd"])
def test_linear_model_is_its_own_twin(optimizer: str) -> None:
    """f(x; θ) = Wx + b is linear in θ: the twin trained on the same batches is the model."""
    x, y = _data()
    torch.manual_seed(0)
    net = nn.Linear(12, 1).double()
    twin = Linearized(net)
    assert twin.method == "jvp"
    cfg = TrainSpec(optimizer=optimizer, lr=0.05, epochs=5, batch_size=16, l2=1e-2)
    _fit(net, x, y, cfg)
    _fit(twin, x, y, cfg)
    with torch.no_grad():
        d = lin_distances(net(x), twin(x), torch.zeros(40, 1))
    assert d[0] < 1e-12
    assert torch.allclose(dict(net.named_parameters())["weight"], twin.theta[0], atol=1e-12)


@pytest.mark.parametrize("kind", ["relu", "attn"])
@pytest.mark.parametrize("train_output", [False, True])
def test_closed_form_equals_jvp_through_training(kind: str, train_output: bool) -> None:
    x, y = _data()
    net = build_model(
        kind, x, 32, 1, sigma_w=1.0, train_output=train_output, seed=1, dtype=torch.float64
    )
    fast, slow = Linearized(net), Linearized(net, method="jvp")
    assert fast.method == "structured"
    with torch.no_grad():
        assert torch.allclose(fast(x), net(x), atol=1e-12)  # θ = θ₀: the twin is the network
    cfg = TrainSpec(optimizer="adam", lr=1e-2, epochs=4, batch_size=16, l2=1e-3)
    _fit(fast, x, y, cfg)
    _fit(slow, x, y, cfg)
    with torch.no_grad():
        assert torch.allclose(fast(x), slow(x), atol=1e-9)
        assert not torch.allclose(fast(x), net(x), atol=1e-3)  # it did train
    for p in net.parameters():  # the network itself is untouched by the twin's training
        assert p.grad is None


def test_twin_is_linear_in_theta() -> None:
    """f_lin(θ₀ + tΔ) − f_lin(θ₀) is exactly t times the same vector (no curvature)."""
    x, _ = _data()
    net = build_model("relu", x, 16, 3, sigma_w=1.0, train_output=True, seed=2, dtype=torch.float64)
    twin = Linearized(net)
    with torch.no_grad():
        f0 = twin(x)
        steps = [torch.randn_like(t) for t in twin.theta]
        theta0 = [dict(net.named_parameters())[n] for n in twin.names]
        outs = []
        for t in (1.0, 3.0):
            for p, s, p0 in zip(twin.theta, steps, theta0):
                p.copy_(p0 + t * s)
            outs.append(twin(x) - f0)
    assert torch.allclose(outs[1], 3.0 * outs[0], atol=1e-10)
    assert float(outs[0].abs().max()) > 1e-3


def _rel_distance(width: int, lr: float, epochs: int) -> float:
    x, y = _data(n=60, d=10, seed=4)
    net = build_model("relu", x, width, 1, sigma_w=1.0, seed=5, dtype=torch.float64)
    init = Linearized(net)  # θ₀ snapshot: at θ = θ₀ it is the initial network
    with torch.no_grad():
        f_init = init(x)
    twin = Linearized(net)
    cfg = TrainSpec(optimizer="gd", lr=lr, epochs=epochs, l2=1e-3)
    _fit(net, x, y, cfg, seed=batch_seed(0, width))
    _fit(twin, x, y, cfg, seed=batch_seed(0, width))
    with torch.no_grad():
        return lin_distances(net(x), twin(x), f_init)[1]


def test_lazy_limit_twin_approaches_network_with_width_and_small_steps() -> None:
    wide, narrow = _rel_distance(1024, 1.0, 40), _rel_distance(16, 1.0, 40)
    assert wide < 0.05 < 0.1 < narrow  # measured: 0.019 and 0.187
    assert _rel_distance(64, 1e-3, 20) < 1e-2  # tiny total step: both barely leave θ₀ alike


def test_structured_refused_without_structure() -> None:
    with pytest.raises(ConfigError):
        Linearized(nn.Linear(3, 1), method="structured")
