"""2L-ReLU and MLP-Attn networks of one width in one fused stack (``train_batched`` with
mixed kinds: one head on fixed features, each network through its own feature map)
equal each network trained alone: float64, weights and per-epoch losses to 1e-10, each
its own stop epoch; standard and adversarial training, the linearized twins, and the
stacked closed-form input gradient the attacks iterate."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
import torch

from engine.errors import ConfigError
from engine.models import MLPAttn, TwoLayerNet, build_model
from engine.models.closed_form import input_grad, model_input_grad, stack
from engine.ntk.linearized import Linearized
from engine.run.spec import TrainSpec
from engine.train.adversarial import make_perturb, perturb_stacked
from engine.train.batched import stackable, train_batched, train_one

StackData = Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]
"""The ``stack_data`` fixture (tests/engine/train/conftest.py)."""
DT = torch.float64
D, M = 6, 8
KINDS = ("relu", "attn", "attn", "relu")
"""Two runs of each kind, interleaved: the stack's feature maps come in three runs."""
STOPS = (3, 2, 4, 3)
"""Network b's last epoch: they stop apart, so the stack drops networks of both kinds."""


def _net(kind: str, b: int, x: torch.Tensor, n_out: int, train_output: bool = False):  # type: ignore[no-untyped-def]
    shift = x.mean(0)
    kw = dict(sigma_w=1.0, seed=b, dtype=DT, input_shift=shift, train_output=train_output)
    if kind == "relu":
        return TwoLayerNet(D, M, n_out, **kw)
    return MLPAttn(x - shift, M, n_out, **kw)


def _perturb(b: int):  # type: ignore[no-untyped-def]
    gen = torch.Generator().manual_seed(100 + b)
    return make_perturb("pgd", 0.2, 2, None, generator=gen, engine="fused")


def _check(nets, alone, losses, init) -> None:  # type: ignore[no-untyped-def]
    for b, net in enumerate(nets):
        ref_losses, ref_w = alone[b]
        assert len(losses[b]) == STOPS[b]  # its own stop epoch
        torch.testing.assert_close(losses[b], ref_losses, rtol=1e-10, atol=1e-12)
        for got, ref in zip(net.parameters(), ref_w):
            torch.testing.assert_close(got.detach(), ref, rtol=0, atol=1e-10)
        moved = max((p.detach() - w0).abs().max() for p, w0 in zip(net.parameters(), init[b]))
        assert moved > 1e-3  # trained, not merely left at init


def _stacked(nets, data, cfg, perturbs=None):  # type: ignore[no-untyped-def]
    """Per-epoch losses of ``nets`` trained in one ``train_batched`` call (asserted one
    stack: every epoch's event lists all networks still training)."""
    losses: list[list[float]] = [[] for _ in nets]
    for ev in train_batched(
        nets,
        torch.stack([x for x, _ in data]),
        torch.stack([y for _, y in data]),
        cfg,
        generators=[torch.Generator().manual_seed(20 + b) for b in range(len(nets))],
        stop=lambda b, ls: len(ls) >= STOPS[b],
        perturbs=perturbs,
    ):
        live = [b for b in range(len(nets)) if len(losses[b]) < STOPS[b]]
        assert list(ev.networks) == live  # one chunk: both kinds in it
        for b, st in zip(ev.networks, ev.stats):
            losses[b].append(st.loss)
    return losses


@pytest.mark.parametrize("adversarial", [False, True])
@pytest.mark.parametrize(("n_out", "train_output"), [(1, False), (3, True)])
def test_relu_and_attn_stacked_equal_each_alone(
    stack_data: StackData, n_out: int, train_output: bool, adversarial: bool
):
    cfg = TrainSpec(optimizer="adam", lr=1e-2, epochs=max(STOPS), batch_size=5, l2=1e-3)
    data = [stack_data(b, n_out) for b in range(len(KINDS))]
    alone = []
    for b, ((x, y), kind) in enumerate(zip(data, KINDS)):
        net = _net(kind, b, x, n_out, train_output)
        one = dataclasses.replace(cfg, epochs=STOPS[b])
        gen = torch.Generator().manual_seed(20 + b)
        pert = _perturb(b) if adversarial else None
        ls = [st.loss for st in train_one(net, x, y, one, generator=gen, perturb=pert)]
        alone.append((ls, [p.detach().clone() for p in net.parameters()]))
    nets = [_net(k, b, x, n_out, train_output) for b, ((x, _), k) in enumerate(zip(data, KINDS))]
    init = [[p.detach().clone() for p in n.parameters()] for n in nets]
    perturbs = [_perturb(b) for b in range(len(KINDS))] if adversarial else None
    losses = _stacked(nets, data, cfg, perturbs)
    _check(nets, alone, losses, init)


def test_twins_of_both_kinds_stacked_equal_each_alone(stack_data: StackData):
    """The structured twins of 2L-ReLU and MLP-Attn networks (the fused twin step, each
    its own features and fixed pattern) in one stack, each its own stop."""
    cfg = TrainSpec(optimizer="adam", lr=1e-2, epochs=max(STOPS), batch_size=5)
    data = [stack_data(b, 3) for b in range(len(KINDS))]

    def twins() -> list[Linearized]:
        return [Linearized(_net(k, b, x, 3)) for b, ((x, _), k) in enumerate(zip(data, KINDS))]

    alone = []
    for b, (twin, (x, y)) in enumerate(zip(twins(), data)):
        one = dataclasses.replace(cfg, epochs=STOPS[b])
        gen = torch.Generator().manual_seed(20 + b)
        ls = [st.loss for st in train_one(twin, x, y, one, generator=gen)]
        alone.append((ls, [p.detach().clone() for p in twin.parameters()]))
    nets = twins()
    init = [[p.detach().clone() for p in n.parameters()] for n in nets]
    _check(nets, alone, _stacked(nets, data, cfg), init)


def test_mixed_kinds_stack_on_the_fused_step_only(stack_data: StackData):
    """``stackable``: 2L-ReLU with MLP-Attn (and their twins) on the fused step; not
    through autograd (its vmapped step runs one module's code), not QKV-Attn, not
    another width; ``train_batched`` refuses what is not stackable."""
    x, y = stack_data(0, 1)
    relu, attn = _net("relu", 0, x, 1), _net("attn", 1, x, 1)
    fused, auto = TrainSpec(engine="fused"), TrainSpec(engine="autograd")
    assert stackable([relu, attn], fused) and stackable([attn, relu, attn], fused)
    assert stackable([Linearized(relu), Linearized(attn)], fused)
    assert not stackable([relu, attn], auto)
    assert not stackable([Linearized(relu), Linearized(attn)], auto)
    wide = TwoLayerNet(D, 2 * M, 1, seed=0, dtype=DT)
    assert not stackable([wide, attn], fused)
    qkv = build_model("qkv", x, M, 1, seed=0, dtype=DT)
    assert not stackable([relu, qkv], fused)
    with pytest.raises(ConfigError, match="one class"):
        next(
            iter(
                train_batched(
                    [relu, attn],
                    x,
                    y,
                    dataclasses.replace(auto, epochs=1),
                    generators=[torch.Generator(), torch.Generator()],
                )
            )
        )


@pytest.mark.parametrize("n_out", [1, 3])
def test_stacked_input_gradient_of_mixed_kinds(stack_data: StackData, n_out: int):
    """``input_grad`` of 2L-ReLU and MLP-Attn networks stacked (three feature-map runs)
    equals each network's own closed-form input gradient; ``perturb_stacked`` of them
    returns each network's own perturbation's points."""
    data = [stack_data(b, n_out) for b in range(len(KINDS))]
    nets = [_net(k, b, x, n_out) for b, ((x, _), k) in enumerate(zip(data, KINDS))]
    net = stack(nets)
    assert net is not None and [(f.lo, f.hi) for f in net.maps] == [(0, 1), (1, 3), (3, 4)]
    x, y = torch.stack([x for x, _ in data]), torch.stack([y for _, y in data])
    g, loss = input_grad(net, x, y)
    for b, n in enumerate(nets):
        fn = model_input_grad(n)
        assert fn is not None
        gb, lb = fn(x[b], y[b])
        torch.testing.assert_close(g[b], gb, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(loss[b], lb, rtol=1e-12, atol=1e-14)
    got = perturb_stacked([_perturb(b) for b in range(len(nets))], nets, x, y)
    assert got is not None
    for b, n in enumerate(nets):
        torch.testing.assert_close(got[b], _perturb(b)(n, x[b], y[b]), rtol=0, atol=1e-12)
    assert (got - x).abs().max() > 1e-3  # the points moved
