"""Training loop: learns, is deterministic, diverges and cancels cleanly."""

from __future__ import annotations

import pytest
import torch

from engine.errors import Cancelled, DivergedError
from engine.models import TwoLayerNet
from engine.run.spec import TrainSpec
from engine.train import data_loss, evaluate, train


def _data(n: int = 64, d: int = 6) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, d, generator=g, dtype=torch.float64)
    w = torch.randn(d, generator=g, dtype=torch.float64)
    yb = torch.sign((x - 0.5) @ w)
    ym = ((x - 0.5) @ torch.randn(d, 3, generator=g, dtype=torch.float64)).argmax(1)
    return x, yb, ym


def _run(y: torch.Tensor, n_out: int, **cfg: object) -> tuple[TwoLayerNet, list]:
    x = _data()[0]
    net = TwoLayerNet(6, 32, n_out, sigma_w=1.0, seed=0, dtype=torch.float64)
    spec = TrainSpec(**{"epochs": 40, "lr": 1e-2, "batch_size": 16, **cfg})
    stats = list(train(net, x, y, spec, generator=torch.Generator().manual_seed(0)))
    return net, stats


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_loss_decreases(task: str) -> None:
    _, yb, ym = _data()
    y, k = (yb, 1) if task == "binary" else (ym, 3)
    net, stats = _run(y, k)
    assert len(stats) == 40
    assert stats[-1].loss < 0.7 * stats[0].loss
    loss, acc = evaluate(net, _data()[0], y)
    with torch.no_grad():
        direct = float(data_loss(net(_data()[0]), y))
    assert acc > 0.7 and loss == pytest.approx(direct)


def test_deterministic() -> None:
    y = _data()[1]
    a, sa = _run(y, 1)
    b, sb = _run(y, 1)
    torch.testing.assert_close(a.weight, b.weight, rtol=0, atol=0)
    assert [s.loss for s in sa] == [s.loss for s in sb]


def test_full_batch_gd_and_sgd_run() -> None:
    y = _data()[1]
    for opt in ("gd", "sgd"):
        _, stats = _run(y, 1, optimizer=opt, lr=0.5)
        assert stats[-1].loss < stats[0].loss


def test_divergence_names_epoch_and_lr() -> None:
    y = _data()[1]
    with pytest.raises(DivergedError, match=r"diverged at epoch \d+.*lower learning rate"):
        _run(y, 1, optimizer="sgd", lr=1e200)


def test_cancel() -> None:
    x, y, _ = _data()
    net = TwoLayerNet(6, 8, 1, dtype=torch.float64)
    with pytest.raises(Cancelled):
        list(
            train(
                net,
                x,
                y,
                TrainSpec(epochs=5),
                generator=torch.Generator(),
                should_stop=lambda: True,
            )
        )


def test_small_steps_train_on_one_thread_and_restore_the_count():
    """step_threads: one thread while a step is under SMALL_STEP_MACS, the count restored
    after; big steps keep torch's setting."""
    from engine.models import TwoLayerNet
    from engine.run.spec import TrainSpec
    from engine.train.loop import SMALL_STEP_MACS, step_threads, train

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        small = TwoLayerNet(16, 8, 1, seed=0)
        seen = []
        with step_threads(small, 32, torch.device("cpu")):
            seen.append(torch.get_num_threads())
        assert seen == [1] and torch.get_num_threads() == 2
        big = TwoLayerNet(1024, 1024, 1, seed=0)
        assert 32 * 1024 * 1024 >= SMALL_STEP_MACS
        with step_threads(big, 32, torch.device("cpu")):
            assert torch.get_num_threads() == 2
        x = torch.rand(64, 16, generator=torch.Generator().manual_seed(0))
        y = torch.where(x[:, 0] > 0.5, 1.0, -1.0)
        cfg = TrainSpec(epochs=2, batch_size=16)
        inside = []
        for _ in train(small, x, y, cfg, generator=torch.Generator().manual_seed(0)):
            inside.append(torch.get_num_threads())
        assert inside == [1, 1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_tick_reports_the_steps_of_a_long_epoch_and_changes_nothing_else() -> None:
    """``tick``: a ``BatchTick`` between the steps of an epoch once that many seconds have
    passed (here 0: after every step but the last), so a run's progress moves inside a
    long (adversarial) epoch; the weights and the epochs' statistics are those without."""
    from engine.train import BatchTick
    from engine.train.adversarial import make_perturb

    x, yb, _ = _data()
    spec = TrainSpec(epochs=3, lr=1e-2, batch_size=16, engine="autograd")

    def go(tick: float | None) -> tuple[TwoLayerNet, list]:
        net = TwoLayerNet(6, 32, 1, sigma_w=1.0, seed=0, dtype=torch.float64)
        perturb = make_perturb("pgd", 0.1, 2, None, generator=torch.Generator().manual_seed(1))
        gen = torch.Generator().manual_seed(0)
        return net, list(train(net, x, yb, spec, generator=gen, perturb=perturb, tick=tick))

    plain_net, plain = go(None)
    net, out = go(0.0)
    ticks = [s for s in out if isinstance(s, BatchTick)]
    epochs = [s for s in out if not isinstance(s, BatchTick)]
    assert not any(isinstance(s, BatchTick) for s in plain)
    # 64 points in batches of 16: steps 1-3 of each epoch are reported, the 4th ends it
    assert [(t.epoch, t.batch, t.batches) for t in ticks] == [
        (e, b, 4) for e in (1, 2, 3) for b in (1, 2, 3)
    ]
    assert [(s.epoch, s.loss, s.accuracy) for s in epochs] == [
        (s.epoch, s.loss, s.accuracy) for s in plain
    ]
    for a, b in zip(net.parameters(), plain_net.parameters()):
        assert torch.equal(a, b)
