"""The closed-form (fused) step equals the autograd reference: float64, 200 steps, 1e-10.

For every (model, loss, optimiser, L2) two networks train stacked in one fused chunk
(B = 2: their own seeds and batch orders, one with an excluded point) and one alone through
``engine.train.train`` (B = 1); each is compared with its separate autograd run
(``train.engine = "autograd"``): epoch losses and weights.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from engine.errors import ConfigError
from engine.models import MLPAttn, QKVAttn, TwoLayerNet
from engine.ntk.linearized import Linearized
from engine.run.spec import TrainSpec
from engine.train import fused, train
from engine.train.batched import train_batched

N, D, WIDTH, BS = 40, 8, 16, 20  # 2 mini-batches an epoch: 100 epochs = 200 steps
TOL = 1e-10


def _data(classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(N, D, generator=g, dtype=torch.float64) - 0.3
    if classes:
        return x, torch.randint(0, classes, (N,), generator=g)
    return x, torch.sign(torch.randn(N, generator=g, dtype=torch.float64))


def _build(kind: str, x: torch.Tensor, seed: int, n_out: int, train_output: bool):
    kw = dict(seed=seed, dtype=torch.float64, train_output=train_output)
    base = kind.removesuffix("-twin")
    net = TwoLayerNet(D, WIDTH, n_out, **kw) if base == "relu" else MLPAttn(x, WIDTH, n_out, **kw)
    if kind.endswith("-twin"):
        return Linearized(net)
    return net


def _cfg(optimizer: str, l2: float, engine: str) -> TrainSpec:
    lr = {"adam": 1e-2, "sgd": 0.5, "gd": 0.5}[optimizer]
    epochs = 200 if optimizer == "gd" else 100  # 200 steps either way
    return TrainSpec(optimizer=optimizer, lr=lr, epochs=epochs, batch_size=BS, l2=l2, engine=engine)


def _weights(m: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach() for p in m.parameters() if p.requires_grad]


def _close(a: list[torch.Tensor], b: list[torch.Tensor]) -> None:
    for p, q in zip(a, b, strict=True):
        torch.testing.assert_close(p, q, rtol=TOL, atol=TOL * float(q.abs().max()))


def _check(
    kind: str, classes: int, optimizer: str, l2: float, train_output: bool, monkeypatch
) -> None:
    # which path ran: the closed-form gradient is built once a chunk (a run that fell back
    # to autograd would match the reference trivially)
    built: list[fused.FusedPlan] = []
    real = fused.grad_fn
    monkeypatch.setattr(fused, "grad_fn", lambda p: built.append(p) or real(p))
    x, y = _data(classes)
    n_out = classes or 1
    seeds, orders, excl = (1, 2), (5, 6), (None, 3)
    ref = _cfg(optimizer, l2, "autograd")
    refs, hists = [], []
    for s, o, e in zip(seeds, orders, excl):
        m = _build(kind, x, s, n_out, train_output)
        g = torch.Generator().manual_seed(o)
        hists.append([st.loss for st in train(m, x, y, ref, generator=g, exclude=e)])
        refs.append(m)
    assert not built  # the reference is autograd's
    init = [w.clone() for w in _weights(_build(kind, x, seeds[0], n_out, train_output))]
    # B = 2: one stacked chunk
    nets = [_build(kind, x, s, n_out, train_output) for s in seeds]
    assert fused.plan(nets[0]) is not None
    got: dict[int, list[float]] = {b: [] for b in range(2)}
    for ev in train_batched(
        nets,
        x,
        y,
        _cfg(optimizer, l2, "fused"),
        generators=[torch.Generator().manual_seed(o) for o in orders],
        excludes=list(excl),
    ):
        for b, st in zip(ev.networks, ev.stats):
            got[b].append(st.loss)
    assert len(built) == 1  # one stacked fused chunk
    for b in range(2):
        assert got[b] == pytest.approx(hists[b], rel=TOL, abs=0)
        _close(_weights(nets[b]), _weights(refs[b]))
    # B = 1: engine.train.train's own dispatch
    one = _build(kind, x, seeds[0], n_out, train_output)
    g = torch.Generator().manual_seed(orders[0])
    losses = [st.loss for st in train(one, x, y, _cfg(optimizer, l2, "fused"), generator=g)]
    assert len(built) == 2  # train() took the fused step too
    assert losses == pytest.approx(hists[0], rel=TOL, abs=0)
    _close(_weights(one), _weights(refs[0]))
    # they trained: far beyond the tolerance
    assert max(float((w - i).abs().max()) for w, i in zip(_weights(one), init)) > 1e-3


@pytest.mark.parametrize("l2", [0.0, 1e-3])
@pytest.mark.parametrize("optimizer", ["adam", "sgd", "gd"])
@pytest.mark.parametrize("classes", [0, 3], ids=["mse", "ce"])
@pytest.mark.parametrize("kind", ["relu", "attn", "relu-twin", "attn-twin"])
def test_fused_equals_autograd(
    kind: str, classes: int, optimizer: str, l2: float, monkeypatch
) -> None:
    _check(kind, classes, optimizer, l2, False, monkeypatch)


@pytest.mark.parametrize("classes", [0, 3], ids=["mse", "ce"])
@pytest.mark.parametrize("kind", ["relu", "attn-twin"])
def test_fused_trained_output_layer(kind: str, classes: int, monkeypatch) -> None:
    _check(kind, classes, "adam", 1e-3, True, monkeypatch)


def test_the_comparison_can_fail() -> None:
    """A one-step shorter fused run is far outside the tolerance of the reference."""
    x, y = _data(0)
    a, b = (_build("relu", x, 1, 1, False) for _ in range(2))
    list(train(a, x, y, _cfg("adam", 1e-3, "autograd"), generator=torch.Generator()))
    short = dataclasses.replace(_cfg("adam", 1e-3, "fused"), epochs=99)
    list(train(b, x, y, short, generator=torch.Generator()))
    with pytest.raises(AssertionError):
        _close(_weights(b), _weights(a))


def test_which_models_take_the_fused_step() -> None:
    x, _ = _data(0)
    assert fused.plan(QKVAttn(x, WIDTH, 1, dtype=torch.float64)) is None
    assert fused.plan(Linearized(TwoLayerNet(D, WIDTH), method="jvp")) is None
    assert fused.plan(TwoLayerNet(D, WIDTH)) is not None
    with pytest.raises(ConfigError, match="train.engine"):
        TrainSpec(engine="compiled")


def test_float_targets_need_one_output() -> None:
    x, y = _data(0)
    net = TwoLayerNet(D, WIDTH, 3, dtype=torch.float64)
    with pytest.raises(ConfigError, match="targets"):
        list(train(net, x, y, _cfg("adam", 0.0, "fused"), generator=torch.Generator()))


@pytest.mark.parametrize("train_output", [False, True])
def test_the_estimate_prices_as_fused_exactly_the_kinds_the_fused_planner_accepts(
    train_output: bool,
) -> None:
    """``work.FUSED_KINDS`` restates, without building a model, what ``fused.plan``
    decides from one: the two must name the same kinds or the dry-run prices the wrong path."""
    from engine.experiments.work import FUSED_KINDS
    from engine.kinds import MODEL_KINDS
    from engine.models import build_model
    from engine.train import fused

    x = torch.randn(12, 6, generator=torch.Generator().manual_seed(0))
    planned = {
        k
        for k in MODEL_KINDS
        if fused.plan(build_model(k, x, 8, train_output=train_output)) is not None
    }
    assert planned == set(FUSED_KINDS)


@pytest.mark.parametrize("kind", ["relu", "relu-twin"])
def test_kept_buffers_give_each_call_its_own_gradient(kind: str) -> None:
    """The step's buffers (``fused._Buffers``) are reused across calls and shapes: a
    gradient function that saw other batch sizes and stack sizes in between returns, for
    the same inputs, what a fresh one returns (a stale or shared buffer would not)."""
    x, y = _data(3)
    nets = [_build(kind, x, s, 3, True) for s in range(3)]
    plan = fused.plan(nets[0])
    assert plan is not None
    frozen = [plan.frozen(m) for m in nets]
    fixed = {k: torch.stack([f[k] for f in frozen]) for k in frozen[0]}
    names = [k for k, p in nets[0].named_parameters() if p.requires_grad]
    params = {k: torch.stack([dict(m.named_parameters())[k].detach() for m in nets]) for k in names}
    feats = torch.stack([plan.features(m, x) for m in nets])

    def call(fn: fused.GradFn, b: int, nb: int) -> dict[str, torch.Tensor]:
        sub = {k: v[:nb] for k, v in params.items()}
        fix = {k: v[:nb] for k, v in fixed.items()}
        yb = y[:b].expand(nb, b)
        grads, _ = fn(sub, fix, feats[:nb, :b], yb, torch.ones(nb, b, dtype=x.dtype))
        return {k: g.clone() for k, g in grads.items()}

    kept = fused.grad_fn(plan)
    first = call(kept, BS, 3)
    for b, nb in ((7, 3), (BS, 2), (N, 1)):  # other shapes in between
        call(kept, b, nb)
    again = call(kept, BS, 3)
    fresh = call(fused.grad_fn(plan), BS, 3)
    for k in first:
        assert torch.equal(first[k], again[k]) and torch.equal(again[k], fresh[k])
        assert first[k].abs().sum() > 0  # a gradient, not an empty buffer


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("classes", [0, 3])
def test_no_weights_is_every_weight_one_bitwise(classes: int, dtype: torch.dtype) -> None:
    """A chunk that excludes no point passes no weights (``fused._loss_grad``'s None):
    the gradients and losses are bit for bit those of weights all 1, including the
    shorter last mini-batch's 1/b (a wrong scale or a dropped weight would differ)."""
    x, y = _data(classes)
    x = x.to(dtype)
    y = y.to(dtype) if not classes else y
    n_out = classes or 1
    nets = [_build("relu", x.double(), s, n_out, True).to(dtype) for s in range(2)]
    plan = fused.plan(nets[0])
    assert plan is not None
    names = [k for k, p in nets[0].named_parameters() if p.requires_grad]
    params = {k: torch.stack([dict(m.named_parameters())[k].detach() for m in nets]) for k in names}
    feats = torch.stack([plan.features(m, x) for m in nets])
    fn = fused.grad_fn(plan)
    for b in (BS, 7):
        yb = y[:b].expand(2, b)
        ones = torch.ones(2, b, dtype=dtype)
        ref, (ref_l, _) = fn(params, {}, feats[:, :b], yb, ones)
        ref = {k: g.clone() for k, g in ref.items()}
        got, (got_l, _) = fn(params, {}, feats[:, :b], yb, None)
        assert torch.equal(got_l, ref_l) and ref_l.abs().sum() > 0
        for k in ref:
            assert torch.equal(got[k], ref[k]) and ref[k].abs().sum() > 0
        half = ones.clone()
        half[:, 0] = 0.0  # an excluded point: weights matter, so the check can fail
        other, _ = fn(params, {}, feats[:, :b], yb, half)
        assert not all(torch.equal(other[k], ref[k]) for k in ref)
