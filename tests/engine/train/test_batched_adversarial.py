"""Adversarial training stacked (``train_batched(perturbs=...)``, the fused step) equals
each network trained alone: float64, three networks, each its own data, init, batch
order, PGD random starts, optimiser state and stop; weights to 1e-10."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
import torch

from engine.models import MLPAttn, TwoLayerNet
from engine.run.spec import TrainSpec
from engine.train.adversarial import make_perturb, perturb_stacked
from engine.train.batched import train_batched, train_one

StackData = Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]
"""The ``stack_data`` fixture (tests/engine/train/conftest.py)."""
DT = torch.float64
N, D, M, B = 12, 6, 8, 3
STOPS = (2, 4, 3)
"""Network b's last epoch: they stop apart, so the stack drops one, then another."""


def _net(kind: str, b: int, x: torch.Tensor, n_out: int) -> torch.nn.Module:
    shift = x.mean(0)
    kw = dict(sigma_w=1.0, seed=b, dtype=DT, input_shift=shift)
    if kind == "relu":
        return TwoLayerNet(D, M, n_out, **kw)
    return MLPAttn(x - shift, M, n_out, **kw)


def _perturb(recipe: str, b: int):  # type: ignore[no-untyped-def]
    gen = torch.Generator().manual_seed(100 + b)
    return make_perturb(recipe, 0.2, 2, None, generator=gen, engine="fused")


@pytest.mark.parametrize("recipe", ["pgd", "fgsm_rs"])
@pytest.mark.parametrize(("kind", "n_out"), [("relu", 1), ("attn", 3)])
def test_stacked_adversarial_training_equals_each_alone(
    stack_data: StackData, kind: str, n_out: int, recipe: str
):
    cfg = TrainSpec(optimizer="adam", lr=1e-2, epochs=max(STOPS), batch_size=5, l2=1e-3)
    data = [stack_data(b, n_out) for b in range(B)]
    alone = []
    for b, (x, y) in enumerate(data):
        net = _net(kind, b, x, n_out)
        one = dataclasses.replace(cfg, epochs=STOPS[b])
        gen = torch.Generator().manual_seed(20 + b)
        losses = [
            st.loss for st in train_one(net, x, y, one, generator=gen, perturb=_perturb(recipe, b))
        ]
        alone.append((losses, [p.detach().clone() for p in net.parameters()]))
    nets = [_net(kind, b, x, n_out) for b, (x, _) in enumerate(data)]
    init = [[p.detach().clone() for p in n.parameters()] for n in nets]
    losses: list[list[float]] = [[] for _ in range(B)]
    for ev in train_batched(
        nets,
        torch.stack([x for x, _ in data]),
        torch.stack([y for _, y in data]),
        cfg,
        generators=[torch.Generator().manual_seed(20 + b) for b in range(B)],
        stop=lambda b, ls: len(ls) >= STOPS[b],
        perturbs=[_perturb(recipe, b) for b in range(B)],
    ):
        for b, st in zip(ev.networks, ev.stats):
            losses[b].append(st.loss)
    for b in range(B):
        ref_losses, ref_w = alone[b]
        assert len(losses[b]) == STOPS[b]
        torch.testing.assert_close(losses[b], ref_losses, rtol=1e-10, atol=1e-12)
        for got, ref in zip(nets[b].parameters(), ref_w):
            torch.testing.assert_close(got.detach(), ref, rtol=0, atol=1e-10)
        assert (
            max((p.detach() - w0).abs().max() for p, w0 in zip(nets[b].parameters(), init[b]))
            > 1e-3
        )


def test_a_stacked_epoch_reports_its_steps_with_tick(stack_data: StackData):
    """``tick=0``: between two epochs, a tick after every step but the last, in order."""
    cfg = TrainSpec(optimizer="adam", lr=1e-2, epochs=2, batch_size=5)
    data = [stack_data(b, 1) for b in range(B)]
    nets = [_net("relu", b, x, 1) for b, (x, _) in enumerate(data)]
    seen = []
    for ev in train_batched(
        nets,
        torch.stack([x for x, _ in data]),
        torch.stack([y for _, y in data]),
        cfg,
        generators=[torch.Generator().manual_seed(b) for b in range(B)],
        perturbs=[_perturb("pgd", b) for b in range(B)],
        tick=0.0,
    ):
        seen.append((ev.epoch, ev.tick.batch, ev.tick.batches) if ev.tick else (ev.epoch, "end"))
    steps = -(-N // 5)
    per_epoch = [(1, k, steps) for k in range(1, steps)] + [(1, "end")]
    assert seen == per_epoch + [(2, *t[1:]) for t in per_epoch]


@pytest.mark.parametrize("norm", ["linf", "l2"])
@pytest.mark.parametrize(("kind", "n_out"), [("relu", 1), ("attn", 3)])
def test_stacked_pgd_gives_each_perturbations_points(
    stack_data: StackData, kind: str, n_out: int, norm: str
):
    """``perturb_stacked`` (one iterate over three networks) returns what each network's
    own perturbation returns (``run_batched`` over its own ``Ball``), random starts and all."""
    data = [stack_data(b, n_out) for b in range(B)]
    nets = [_net(kind, b, x, n_out) for b, (x, _) in enumerate(data)]

    def perturbs() -> list:
        gens = [torch.Generator().manual_seed(100 + b) for b in range(B)]
        return [make_perturb("pgd", 0.2, 3, None, norm=norm, generator=g) for g in gens]

    x, y = torch.stack([x for x, _ in data]), torch.stack([y for _, y in data])
    got = perturb_stacked(perturbs(), nets, x, y)
    assert got is not None
    for b, p in enumerate(perturbs()):
        ref = p(nets[b], x[b], y[b])
        assert (ref - x[b]).abs().max() > 1e-3  # it moved
        torch.testing.assert_close(got[b], ref, rtol=0, atol=1e-12)
    auto = [make_perturb("pgd", 0.2, 3, None, engine="autograd") for _ in range(B)]
    assert perturb_stacked(auto, nets, x, y) is None  # not the closed form: one at a time
