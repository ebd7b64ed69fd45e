"""Known answers for the attacks: FGSM against a hand-derived input gradient, MIM invariants."""

from __future__ import annotations

import math

import pytest
import torch

from engine.attacks import fgsm, mim, per_example_loss, pgd, run_attack
from engine.errors import ConfigError
from engine.models import TwoLayerNet

DT = torch.float64


def _net(n_out: int = 1, seed: int = 0) -> TwoLayerNet:
    # σ_w = 1 makes the network clearly nonlinear on this scale (the paper's 0.01 is near-linear)
    return TwoLayerNet(6, 8, n_out, sigma_w=1.0, train_output=True, seed=seed, dtype=DT)


def _data(n: int = 9, n_out: int = 1, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 6, generator=g, dtype=DT)
    x[0, :2] = torch.tensor([0.0, 1.0], dtype=DT)  # pixels on the box faces
    if n_out == 1:
        y = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).to(DT)
    else:
        y = torch.randint(0, n_out, (n,), generator=g)
    return x, y


def _closed_form(net: TwoLayerNet, x: torch.Tensor, y: torch.Tensor):
    """(per-example loss, ∇ₓ loss) of f = aᵀReLU(W x/‖x‖)/√m by the chain rule, no autograd."""
    w, a, m = net.weight.detach(), net.output.detach(), net.width
    r = x.norm(dim=1, keepdim=True)
    xt = x / r
    pre = xt @ w.T
    f = torch.relu(pre) @ a / math.sqrt(m)  # [n, K]
    if y.is_floating_point():
        loss = (f[:, 0] - y) ** 2
        dl_df = (2 * (f[:, 0] - y))[:, None]
    else:
        logp = torch.log_softmax(f, dim=1)
        loss = -logp[torch.arange(len(y)), y]
        dl_df = logp.exp() - torch.nn.functional.one_hot(y, f.shape[1]).to(DT)
    dl_dxt = ((dl_df @ a.T) * (pre > 0).to(DT)) @ w / math.sqrt(m)
    # ∂(x/‖x‖)/∂x = (I − x̃x̃ᵀ)/‖x‖
    grad = (dl_dxt - (dl_dxt * xt).sum(1, keepdim=True) * xt) / r
    return loss, grad


@pytest.mark.parametrize("n_out", [1, 3])
def test_fgsm_linf_equals_hand_gradient(n_out: int) -> None:
    net = _net(n_out)
    x, y = _data(n_out=n_out)
    loss, grad = _closed_form(net, x, y)
    res = fgsm(net, x, y, eps=0.2)
    torch.testing.assert_close(res.x_adv, (x + 0.2 * grad.sign()).clamp(0, 1), rtol=0, atol=1e-12)
    torch.testing.assert_close(res.loss_before, loss, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(
        res.loss_after, _closed_form(net, res.x_adv, y)[0], rtol=1e-10, atol=1e-12
    )


def test_fgsm_l2_equals_hand_gradient() -> None:
    net = _net(3)
    x, y = _data(n_out=3)
    _, grad = _closed_form(net, x, y)
    res = fgsm(net, x, y, eps=0.5, norm="l2")
    expected = (x + 0.5 * grad / grad.norm(dim=1, keepdim=True)).clamp(0, 1)
    torch.testing.assert_close(res.x_adv, expected, rtol=0, atol=1e-12)


def test_custom_loss_fn_is_maximised() -> None:
    """loss_fn = −L turns the sign step around: FGSM then descends the training loss."""
    net = _net()
    x, y = _data()
    _, grad = _closed_form(net, x, y)
    res = fgsm(net, x, y, eps=0.1, loss_fn=lambda m, xx, yy: -per_example_loss(m, xx, yy))
    torch.testing.assert_close(res.x_adv, (x - 0.1 * grad.sign()).clamp(0, 1), rtol=0, atol=1e-12)
    assert res.loss_after.mean() >= res.loss_before.mean()


def test_per_example_loss_known_values_and_mismatch() -> None:
    net1, net3 = _net(1), _net(3)
    x, yb = _data(n_out=1)
    _, yc = _data(n_out=3)
    f1 = net1(x)[:, 0].detach()
    torch.testing.assert_close(per_example_loss(net1, x, yb).detach(), (f1 - yb) ** 2)
    f3 = net3(x).detach()
    ce = torch.logsumexp(f3, 1) - f3[torch.arange(len(yc)), yc]
    torch.testing.assert_close(per_example_loss(net3, x, yc).detach(), ce)
    with pytest.raises(ConfigError):
        per_example_loss(net3, x, yb)  # float targets on a 3-output model
    with pytest.raises(ConfigError):
        per_example_loss(net1, x, yc)  # integer labels on a 1-output model


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_mim_one_step_is_fgsm(norm: str) -> None:
    net = _net(3)
    x, y = _data(n_out=3)
    a = mim(net, x, y, eps=0.3, steps=1, decay=1.0, alpha=0.3, norm=norm)
    b = fgsm(net, x, y, eps=0.3, norm=norm)
    torch.testing.assert_close(a.x_adv, b.x_adv, rtol=0, atol=1e-12)
    torch.testing.assert_close(a.loss_before, b.loss_before)


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_mim_without_momentum_is_pgd_without_random_start(norm: str) -> None:
    net = _net()
    x, y = _data()
    a = mim(net, x, y, eps=0.3, steps=6, decay=0.0, alpha=0.07, norm=norm)
    b = pgd(net, x, y, eps=0.3, steps=6, alpha=0.07, random_start=False, norm=norm)
    torch.testing.assert_close(a.x_adv, b.x_adv, rtol=0, atol=1e-12)
    torch.testing.assert_close(a.loss_after, b.loss_after)


def test_mim_momentum_matches_reference_loop() -> None:
    """A hand-written MI-FGSM loop normalising by mean |∇| (torchattacks' form) agrees."""
    net = _net(3)
    x, y = _data(n_out=3)
    eps, steps, mu = 0.3, 5, 0.9
    alpha = eps / steps
    z, g_m = x.clone(), torch.zeros_like(x)
    for _ in range(steps):
        _, grad = _closed_form(net, z, y)
        g_m = mu * g_m + grad / grad.abs().mean(dim=1, keepdim=True)
        z = z + alpha * g_m.sign()
        z = torch.min(torch.max(z, x - eps), x + eps).clamp(0, 1)
    res = mim(net, x, y, eps=eps, steps=steps, decay=mu)
    torch.testing.assert_close(res.x_adv, z, rtol=0, atol=1e-12)
    # momentum changes the path here, so the test above is not the μ = 0 case in disguise
    plain = mim(net, x, y, eps=eps, steps=steps, decay=0.0)
    assert not torch.allclose(plain.x_adv, res.x_adv)


def test_run_attack_dispatches_and_rejects() -> None:
    net = _net()
    x, y = _data()
    torch.testing.assert_close(
        run_attack("mim", net, x, y, eps=0.2, steps=3).x_adv, mim(net, x, y, eps=0.2, steps=3).x_adv
    )
    torch.testing.assert_close(
        run_attack("fgsm", net, x, y, eps=0.2).x_adv, fgsm(net, x, y, eps=0.2).x_adv
    )
    with pytest.raises(ConfigError, match="attack"):
        run_attack("cw", net, x, y, eps=0.2)
    with pytest.raises(ConfigError, match="decay"):
        run_attack("fgsm", net, x, y, eps=0.2, decay=1.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"eps": 0.0},
        {"eps": float("nan")},
        {"eps": 0.1, "norm": "l1"},
        {"eps": 0.1, "steps": 0},
        {"eps": 0.1, "alpha": -1.0},
        {"eps": 0.1, "restarts": 0},
        {"eps": 0.1, "batch_size": 0},
    ],
)
def test_invalid_options_raise_config_error(kwargs: dict) -> None:
    net = _net()
    x, y = _data()
    with pytest.raises(ConfigError):
        pgd(net, x, y, **kwargs)


def test_inputs_outside_pixel_box_rejected() -> None:
    net = _net()
    x, y = _data()
    with pytest.raises(ConfigError, match="x"):
        fgsm(net, x * 2 - 0.5, y, eps=0.1)
    with pytest.raises(ConfigError, match="y"):
        fgsm(net, x, y[:-1], eps=0.1)
