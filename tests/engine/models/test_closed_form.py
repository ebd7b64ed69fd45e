"""The closed-form input gradient equals torch.autograd's (float64, random networks).

B = 3 networks of one kind stacked with their own weights, inputs and (MLP-Attn) contexts,
under MSE (±1 targets, one output) and cross-entropy (labels, three outputs), with and
without data.center's shift, against each network's own autograd gradient of
Σᵢ Lᵢ (``engine.attacks.base.input_grad``).
"""

from __future__ import annotations

import pytest
import torch

from engine.attacks.base import input_grad as autograd_input_grad
from engine.attacks.base import per_example_loss
from engine.models import MLPAttn, QKVAttn, TwoLayerNet
from engine.models import closed_form as cf

DT = torch.float64
B, N, D, M = 3, 7, 6, 8


def _net(kind: str, seed: int, n_out: int, center: bool) -> torch.nn.Module:
    g = torch.Generator().manual_seed(100 + seed)
    shift = torch.rand(D, generator=g, dtype=DT) * 0.3 if center else None
    # σ_w = 1 so that ReLU gates and the gradient's every term are far from zero
    kw = dict(sigma_w=1.0, seed=seed, dtype=DT, input_shift=shift)
    if kind == "relu":
        return TwoLayerNet(D, M, n_out, train_output=seed % 2 == 1, **kw)
    ctx = torch.rand(9, D, generator=g, dtype=DT)
    return MLPAttn(ctx if shift is None else ctx - shift, M, n_out, **kw)


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("n_out", [1, 3])
@pytest.mark.parametrize("kind", ["relu", "attn"])
def test_stacked_input_grad_equals_autograd(kind: str, n_out: int, center: bool) -> None:
    nets = [_net(kind, s, n_out, center) for s in range(B)]
    g = torch.Generator().manual_seed(7)
    x = torch.rand(B, N, D, generator=g, dtype=DT) - 0.4  # both signs: live units
    if n_out == 1:
        y = torch.sign(torch.randn(B, N, generator=g, dtype=DT))
    else:
        y = torch.randint(0, n_out, (B, N), generator=g)
    stacked = cf.stack(nets)
    assert stacked is not None and stacked.w.shape == (B, M, D)
    gx, loss = cf.input_grad(stacked, x, y)
    assert gx.shape == (B, N, D) and loss.shape == (B, N)
    for b, net in enumerate(nets):
        ref_g, ref_l = autograd_input_grad(net, x[b], y[b], per_example_loss)
        torch.testing.assert_close(loss[b], ref_l, rtol=1e-13, atol=1e-15)
        torch.testing.assert_close(gx[b], ref_g, rtol=1e-11, atol=1e-14)
        assert ref_g.abs().max() > 1e-3  # a gradient that is there to match
    # one network alone (the attacks' view) reads the same weights
    one = cf.model_input_grad(nets[1])
    assert one is not None
    g1, _ = one(x[1], y[1])
    torch.testing.assert_close(g1, gx[1], rtol=1e-13, atol=1e-15)


def test_only_fixed_feature_heads_have_a_closed_form() -> None:
    ctx = torch.rand(9, D, dtype=DT)
    assert cf.has_closed_form(TwoLayerNet(D, M, dtype=DT))
    assert cf.has_closed_form(MLPAttn(ctx, M, dtype=DT))
    qkv = QKVAttn(ctx, M, dtype=DT)
    assert not cf.has_closed_form(qkv) and cf.model_input_grad(qkv) is None
    assert cf.stack([TwoLayerNet(D, M, dtype=DT), qkv]) is None


def test_model_input_grad_sees_in_place_updates() -> None:
    net = TwoLayerNet(D, M, sigma_w=1.0, dtype=DT)
    grad = cf.model_input_grad(net)
    assert grad is not None
    x, y = torch.rand(4, D, dtype=DT), torch.ones(4, dtype=DT)
    before, _ = grad(x, y)
    with torch.no_grad():
        net.weight.mul_(-2.0)
    after, _ = grad(x, y)
    ref, _ = autograd_input_grad(net, x, y, per_example_loss)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, ref, rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("center", [False, True])
def test_a_mixed_stack_shares_its_first_stage_bitwise(center: bool, dtype: torch.dtype) -> None:
    """2L-ReLU and MLP-Attn in one stack: the unit-norm scaling they share runs once over
    all networks (``InputGrad.joint``), and gives, bit for bit, what each feature map run
    alone gives; in float64 each network's gradient is autograd's."""
    nets = [_net(k, s, 3, center).to(dtype) for k, s in [("relu", 0), ("attn", 1), ("attn", 2)]]
    nets.append(_net("relu", 3, 3, center).to(dtype))  # maps: relu, attn ×2, relu
    stacked = cf.stack(nets)
    assert stacked is not None and len(stacked.maps) == 3
    fast = cf.InputGrad(stacked)
    assert fast.joint
    slow = cf.InputGrad(stacked)
    slow.joint = False  # each map on its own slice
    g = torch.Generator().manual_seed(3)
    x = torch.rand(4, N, D, generator=g, dtype=dtype) - 0.4
    y = torch.randint(0, 3, (4, N), generator=g)
    ref_g, ref_l = slow(x, y)
    got_g, got_l = fast(x, y)
    assert ref_l is not None and got_l is not None
    assert torch.equal(got_g, ref_g) and torch.equal(got_l, ref_l)
    assert torch.equal(fast.features(x)[0], slow.features(x)[0])
    # each network's features are its model's (the chunk trains on them), up to the
    # rounding of a batched matmul against a single one (x̂C; equal at digits' d 64)
    for b, net in enumerate(nets):
        torch.testing.assert_close(fast.features(x)[0][b], net.features(x[b]))
    # the loss-free form (a training PGD's) gives the same gradient, bit for bit
    free_g, free_l = fast(x, y, cf.minus_onehot(y, 3, dtype))
    assert free_l is None and torch.equal(free_g, ref_g)
    if dtype == torch.float64:
        for b, net in enumerate(nets):
            auto, _ = autograd_input_grad(net, x[b], y[b], per_example_loss)
            torch.testing.assert_close(got_g[b], auto, rtol=1e-11, atol=1e-14)
