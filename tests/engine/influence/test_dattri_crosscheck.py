"""Our exact Koh–Liang influence against an established library's: dattri's explicit
influence-function attributor on the same network, data, loss and damping
(docs/protocol.md#influence, "Conventions"). Needs the ``attribution`` extra."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call
from torch.utils.data import DataLoader, TensorDataset

from engine.influence import gradient_influence
from engine.influence.losses import encode_targets, pointwise_loss
from engine.models import TwoLayerNet

dattri_if = pytest.importorskip(
    "dattri.algorithm.influence_function",
    reason="dattri is not installed (pip install -e '.[attribution]')",
)
dattri_task = pytest.importorskip("dattri.task")

DT = torch.float64


@pytest.mark.parametrize("loss", ["mse", "ce"])
def test_exact_influence_equals_dattri_explicit_if(loss):
    """dattri scores S[i, t] = ∇ℓ_iᵀ(H + λI)⁻¹∇ℓ_t with H the Hessian of the loss it is
    given (here the mean per-example loss over the training set, no L2) and λ its
    ``regularization``; ours is I[t, i] = (1/n) ∇ℓ_tᵀ(H + λI)⁻¹∇ℓ_i with λ = train.l2:
    I = Sᵀ / n, same sign (positive = helpful)."""
    g = torch.Generator().manual_seed(0)
    n, d, lam = 24, 5, 0.03
    x = torch.rand(n, d, generator=g, dtype=DT)
    xt = torch.rand(6, d, generator=g, dtype=DT)
    if loss == "ce":
        y, yt = (x[:, 0] > 0.5).long(), (xt[:, 0] > 0.5).long()
        net = TwoLayerNet(d, 8, n_out=2, sigma_w=1.0, seed=2, dtype=DT)
    else:
        y, yt = torch.sign(x[:, 0] - 0.5), torch.sign(xt[:, 0] - 0.5)
        net = TwoLayerNet(d, 8, sigma_w=1.0, seed=2, dtype=DT)
    k_out = net.n_out
    ours = gradient_influence(net, x, y, xt, yt, lam=lam, loss=loss, method="exact")

    def loss_func(params, data):
        xb, tb = data
        out = functional_call(net, params, (xb,))
        return pointwise_loss(out, tb, loss).mean()

    t, tt = encode_targets(y, k_out, dtype=DT), encode_targets(yt, k_out, dtype=DT)
    task = dattri_task.AttributionTask(loss_func=loss_func, model=net, checkpoints=net.state_dict())
    attributor = dattri_if.IFAttributorExplicit(
        task=task, layer_name=["weight"], device="cpu", regularization=lam
    )
    train = DataLoader(TensorDataset(x, t), batch_size=n, shuffle=False)
    test = DataLoader(TensorDataset(xt, tt), batch_size=6, shuffle=False)
    attributor.cache(train)
    theirs = attributor.attribute(train, test)  # [n_train, n_test]
    assert theirs.shape == (n, 6)
    assert ours.abs().max() > 1e-4
    torch.testing.assert_close(
        ours, theirs.T.to(DT) / n, rtol=1e-6, atol=1e-6 * float(ours.abs().max())
    )
