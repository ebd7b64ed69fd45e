"""Batched training equals separate training, network by network (float64, 1e-12)."""

from __future__ import annotations

import pytest
import torch

from engine.errors import Cancelled, ConfigError, DivergedError
from engine.models import MLPAttn, TwoLayerNet
from engine.models.qkv import QKVAttn
from engine.run.spec import TrainSpec
from engine.train import train
from engine.train.batched import chunk_size, train_batched

N, D, WIDTH = 45, 8, 16  # n not a multiple of the batch size (16): batches 16, 16, 13
RTOL = 1e-12


def _data(classes: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(N, D, generator=g, dtype=torch.float64) - 0.3
    if classes:
        return x, torch.randint(0, classes, (N,), generator=g)
    return x, torch.sign(torch.randn(N, generator=g, dtype=torch.float64))


def _build(kind: str, x: torch.Tensor, seed: int, n_out: int, exclude: int | None, **kw):
    if kind == "relu":
        return TwoLayerNet(D, WIDTH, n_out, seed=seed, dtype=torch.float64, **kw)
    if kind == "attn":  # the refit context: C without the excluded point
        ctx = x if exclude is None else torch.cat([x[:exclude], x[exclude + 1 :]])
        return MLPAttn(ctx, WIDTH, n_out, seed=seed, dtype=torch.float64, **kw)
    return QKVAttn(x, WIDTH, n_out, seed=seed, dtype=torch.float64)


def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a, b, rtol=RTOL, atol=RTOL * float(b.abs().max()))


def _compare(kind, cfg, *, classes=0, excludes=(None, 3, 44, 0), orders=(5, 6, 7, 8), **kw):
    """Train len(excludes) networks batched and separately; assert they agree."""
    x, y = _data(classes)
    n_out = classes or 1
    seeds = [1, 1, 2, 1][: len(excludes)]
    sep, sep_hist = [], []
    for s, e, o in zip(seeds, excludes, orders):
        m = _build(kind, x, s, n_out, e, **kw)
        h = [
            st.loss
            for st in train(m, x, y, cfg, generator=torch.Generator().manual_seed(o), exclude=e)
        ]
        sep.append(m)
        sep_hist.append(h)
    bat = [_build(kind, x, s, n_out, e, **kw) for s, e in zip(seeds, excludes)]
    init = [p.detach().clone() for p in bat[0].parameters()]
    hist: dict[int, list[float]] = {b: [] for b in range(len(bat))}
    for ev in train_batched(
        bat,
        x,
        y,
        cfg,
        generators=[torch.Generator().manual_seed(o) for o in orders[: len(bat)]],
        excludes=list(excludes),
        batch_networks=3,  # two chunks of 4 networks
    ):
        for b, st in zip(ev.networks, ev.stats):
            hist[b].append(st.loss)
    for b in range(len(bat)):
        assert hist[b] == pytest.approx(sep_hist[b], rel=RTOL, abs=0)
        for p, q in zip(bat[b].parameters(), sep[b].parameters()):
            _close(p.detach(), q.detach())
        assert not bat[b].training
    # they trained: the weights moved well beyond the tolerance
    moved = max(float((p.detach() - q).abs().max()) for p, q in zip(bat[0].parameters(), init))
    assert moved > 1e-4
    return bat, sep


@pytest.mark.parametrize("optimizer", ["adam", "sgd", "gd"])
@pytest.mark.parametrize("kind", ["relu", "attn"])
def test_batched_equals_separate(kind: str, optimizer: str) -> None:
    lr = 1e-2 if optimizer == "adam" else 0.5
    cfg = TrainSpec(optimizer=optimizer, lr=lr, epochs=4, batch_size=16, l2=1e-3)
    _compare(kind, cfg)


def test_batched_multiclass_train_output_and_no_l2() -> None:
    cfg = TrainSpec(lr=1e-2, epochs=3, batch_size=16, l2=0.0)
    _compare("attn", cfg, classes=3, train_output=True)


def test_generic_path_qkv() -> None:
    cfg = TrainSpec(lr=1e-2, epochs=2, batch_size=16, l2=1e-3)
    _compare("qkv", cfg, excludes=(None, 3), orders=(5, 6))


def test_statistics_equal_the_separate_run() -> None:
    x, y = _data()
    cfg = TrainSpec(lr=1e-2, epochs=3, batch_size=16)
    a = TwoLayerNet(D, WIDTH, seed=1, dtype=torch.float64)
    sep = list(train(a, x, y, cfg, generator=torch.Generator().manual_seed(4), exclude=7))
    b = TwoLayerNet(D, WIDTH, seed=1, dtype=torch.float64)
    evs = list(
        train_batched([b], x, y, cfg, generators=[torch.Generator().manual_seed(4)], excludes=[7])
    )
    for s, ev in zip(sep, evs):
        (st,) = ev.stats
        assert (st.epoch, st.accuracy) == (s.epoch, pytest.approx(s.accuracy, rel=1e-12))
        assert st.loss == pytest.approx(s.loss, rel=1e-12)


@pytest.mark.parametrize("kind", ["relu", "attn"])
def test_early_stop_equals_a_shorter_run_and_leaves_the_others(kind: str) -> None:
    """Network 1 stops after 2 epochs: it holds a 2-epoch run's weights; the others (Adam
    moments, batch orders, per-network features kept in step) a full run's."""
    x, y = _data()
    cfg = TrainSpec(lr=1e-2, epochs=5, batch_size=16)
    seeds, excl, orders = (1, 2, 3), (None, 3, 44), (5, 6, 7)
    nets = [_build(kind, x, s, 1, e) for s, e in zip(seeds, excl)]
    stopped_at: dict[int, int] = {}
    for ev in train_batched(
        nets,
        x,
        y,
        cfg,
        generators=[torch.Generator().manual_seed(o) for o in orders],
        excludes=list(excl),
        stop=lambda b, losses: b == 1 and len(losses) == 2,
    ):
        for b in ev.stopped:
            stopped_at[b] = ev.epoch
    assert stopped_at == {1: 2, 0: 5, 2: 5}
    for b, (s, e, o) in enumerate(zip(seeds, excl, orders)):
        ref = _build(kind, x, s, 1, e)
        run = TrainSpec(lr=1e-2, epochs=2 if b == 1 else 5, batch_size=16)
        list(train(ref, x, y, run, generator=torch.Generator().manual_seed(o), exclude=e))
        _close(nets[b].head.weight.detach(), ref.head.weight.detach())
    # and a 2-epoch run is not a 5-epoch one: the comparison can fail
    ref = _build(kind, x, seeds[1], 1, excl[1])
    list(train(ref, x, y, cfg, generator=torch.Generator().manual_seed(orders[1]), exclude=excl[1]))
    with pytest.raises(AssertionError):
        _close(nets[1].head.weight.detach(), ref.head.weight.detach())


def test_a_different_generator_gives_different_weights() -> None:
    """The comparison can fail: another batch order is far outside the tolerance."""
    x, y = _data()
    cfg = TrainSpec(lr=1e-2, epochs=3, batch_size=16)
    ref = TwoLayerNet(D, WIDTH, seed=1, dtype=torch.float64)
    list(train(ref, x, y, cfg, generator=torch.Generator().manual_seed(5)))
    other = TwoLayerNet(D, WIDTH, seed=1, dtype=torch.float64)
    list(train_batched([other], x, y, cfg, generators=[torch.Generator().manual_seed(6)]))
    with pytest.raises(AssertionError):
        _close(other.weight.detach(), ref.weight.detach())
    excl = TwoLayerNet(D, WIDTH, seed=1, dtype=torch.float64)
    list(
        train_batched(
            [excl], x, y, cfg, generators=[torch.Generator().manual_seed(5)], excludes=[3]
        )
    )
    with pytest.raises(AssertionError):
        _close(excl.weight.detach(), ref.weight.detach())


def test_divergence_names_the_network_and_cancel_stops() -> None:
    x, y = _data()
    nets = [TwoLayerNet(D, WIDTH, seed=s, dtype=torch.float64) for s in (1, 2)]
    gens = [torch.Generator().manual_seed(o) for o in (5, 6)]
    with pytest.raises(DivergedError, match="network 0"):
        list(
            train_batched(nets, x, y, TrainSpec(optimizer="sgd", lr=1e6, epochs=3), generators=gens)
        )
    with pytest.raises(Cancelled):
        list(
            train_batched(
                nets, x, y, TrainSpec(epochs=3), generators=gens, should_stop=lambda: True
            )
        )


def test_bad_arguments() -> None:
    x, y = _data()
    nets = [
        TwoLayerNet(D, WIDTH, seed=1, dtype=torch.float64),
        TwoLayerNet(D, 8, seed=1, dtype=torch.float64),
    ]
    gens = [torch.Generator(), torch.Generator()]
    with pytest.raises(ConfigError, match="models"):
        list(train_batched(nets, x, y, TrainSpec(epochs=1), generators=gens))
    with pytest.raises(ConfigError, match="exclude"):
        list(train_batched(nets[:1], x, y, TrainSpec(epochs=1), generators=gens[:1], excludes=[N]))
    with pytest.raises(ConfigError, match="batch_networks"):
        chunk_size(nets, N, 16, 0)
    assert chunk_size(nets, N, 16, 7) == 7


def test_the_spec_default_is_the_trainer_default() -> None:
    from engine.train.batched import BATCH_NETWORKS

    assert TrainSpec().batch_networks == BATCH_NETWORKS


class _Whole(torch.nn.Module):
    """MLP-Attn without the ``fixed_features`` flag: the generic path runs the whole module,
    with each network's own C (a buffer that differs between networks, stacked)."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def test_generic_path_with_per_network_buffers() -> None:
    x, y = _data()
    cfg = TrainSpec(lr=1e-2, epochs=3, batch_size=16)
    excl, orders = (None, 3, 44), (5, 6, 7)
    sep = []
    for e, o in zip(excl, orders):
        m = _build("attn", x, 1, 1, e)
        list(train(m, x, y, cfg, generator=torch.Generator().manual_seed(o), exclude=e))
        sep.append(m)
    wrapped = [_Whole(_build("attn", x, 1, 1, e)) for e in excl]
    gens = [torch.Generator().manual_seed(o) for o in orders]
    list(train_batched(wrapped, x, y, cfg, generators=gens, excludes=list(excl)))
    for w, m in zip(wrapped, sep):
        _close(w.inner.head.weight.detach(), m.head.weight.detach())


def _subsets(k: int, classes: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """k different data sets of N points (a sweep's seeds, each its own subset)."""
    g = torch.Generator().manual_seed(11)
    x = torch.rand(k, N, D, generator=g, dtype=torch.float64) - 0.3
    if classes:
        return x, torch.randint(0, classes, (k, N), generator=g)
    return x, torch.sign(torch.randn(k, N, generator=g, dtype=torch.float64))


@pytest.mark.parametrize("optimizer", ["adam", "sgd", "gd"])
@pytest.mark.parametrize("kind", ["relu", "attn", "qkv"])
def test_per_network_data_equals_separate_runs(kind: str, optimizer: str) -> None:
    """x [B, n, d], y [B, n]: network b trains on its own subset exactly as alone, with
    its own early stop (network 1 after 2 epochs), chunked (batch_networks 2 of 3)."""
    lr = 1e-2 if optimizer == "adam" else 0.5
    cfg = TrainSpec(optimizer=optimizer, lr=lr, epochs=4, batch_size=16, l2=1e-3)
    classes = 3 if kind == "attn" else 0
    x, y = _subsets(3, classes)
    n_out = classes or 1
    seeds, orders, excl = (1, 2, 3), (5, 6, 7), (None, None, 9)
    nets = [_build(kind, x[b], s, n_out, excl[b]) for b, s in enumerate(seeds)]
    hist: dict[int, list[float]] = {0: [], 1: [], 2: []}
    for ev in train_batched(
        nets,
        x,
        y,
        cfg,
        generators=[torch.Generator().manual_seed(o) for o in orders],
        excludes=list(excl),
        stop=lambda b, losses: b == 1 and len(losses) == 2,
        batch_networks=2,
    ):
        for b, st in zip(ev.networks, ev.stats):
            hist[b].append(st.loss)
    for b, (s, o) in enumerate(zip(seeds, orders)):
        ref = _build(kind, x[b], s, n_out, excl[b])
        run = TrainSpec(
            optimizer=optimizer, lr=lr, epochs=2 if b == 1 else 4, batch_size=16, l2=1e-3
        )
        gen = torch.Generator().manual_seed(o)
        h = [st.loss for st in train(ref, x[b], y[b], run, generator=gen, exclude=excl[b])]
        assert hist[b] == pytest.approx(h, rel=RTOL, abs=0)
        for p, q in zip(nets[b].parameters(), ref.parameters()):
            _close(p.detach(), q.detach())
    # the subsets matter: network 0 trained on network 2's data ends elsewhere
    other = _build(kind, x[2], seeds[0], n_out, None)
    list(train(other, x[2], y[2], cfg, generator=torch.Generator().manual_seed(orders[0])))
    with pytest.raises(AssertionError):
        for p, q in zip(nets[0].parameters(), other.parameters()):
            _close(p.detach(), q.detach())


def test_sync_writes_the_weights_mid_training() -> None:
    """sync(b, epoch): the model holds epoch e's weights when that epoch is yielded (the
    kernel-drift probe reads them), equal to a separate run of e epochs."""
    x, y = _data()
    cfg = TrainSpec(lr=1e-2, epochs=4, batch_size=16)
    nets = [TwoLayerNet(D, WIDTH, seed=s, dtype=torch.float64) for s in (1, 2)]
    gens = [torch.Generator().manual_seed(o) for o in (5, 6)]
    seen = {}
    for ev in train_batched(nets, x, y, cfg, generators=gens, sync=lambda b, e: e == 2):
        if ev.epoch == 2:
            seen = {b: nets[b].weight.detach().clone() for b in ev.networks}
    for b, (s, o) in enumerate(zip((1, 2), (5, 6))):
        ref = TwoLayerNet(D, WIDTH, seed=s, dtype=torch.float64)
        run = TrainSpec(lr=1e-2, epochs=2, batch_size=16)
        list(train(ref, x, y, run, generator=torch.Generator().manual_seed(o)))
        _close(seen[b], ref.weight.detach())
        with pytest.raises(AssertionError):  # and the final weights are not epoch 2's
            _close(nets[b].weight.detach(), ref.weight.detach())


def test_per_network_data_shape_is_checked() -> None:
    x, y = _subsets(2)
    nets = [TwoLayerNet(D, WIDTH, seed=s, dtype=torch.float64) for s in (1, 2, 3)]
    gens = [torch.Generator() for _ in nets]
    with pytest.raises(ConfigError, match="x, y"):
        list(train_batched(nets, x, y, TrainSpec(epochs=1), generators=gens))
