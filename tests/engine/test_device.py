"""Device selection, and the same numbers on CUDA as on the CPU (GPU tests skip without CUDA)."""

from __future__ import annotations

import pytest
import torch

from engine.device import resolve_device
from engine.errors import ConfigError


def test_auto_picks_cuda_when_present() -> None:
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == want
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(ConfigError, match="device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA device"):
            resolve_device("cuda")


def _net_and_data(device: str):
    from engine.models import MLPAttn

    g = torch.Generator().manual_seed(0)
    x = torch.rand(64, 20, generator=g, dtype=torch.float64)
    model = MLPAttn(x, 128, 3, seed=0, dtype=torch.float64).to(device)
    return model, x.to(device)


@pytest.mark.gpu
def test_structured_ntk_and_influence_match_cpu_on_cuda() -> None:
    from engine.influence import ntk_loo_influence
    from engine.ntk import empirical_ntk

    k = {}
    infl = {}
    for dev in ("cpu", "cuda"):
        model, x = _net_and_data(dev)
        k[dev] = empirical_ntk(model, x, output=0)
        y = torch.arange(64, device=dev) % 3
        infl[dev] = ntk_loo_influence(k[dev][:48, :48], k[dev][48:, :48], y[:48], y[48:], 1e-3)
    torch.testing.assert_close(k["cuda"].cpu(), k["cpu"], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(infl["cuda"].cpu(), infl["cpu"], rtol=1e-8, atol=1e-10)


@pytest.mark.gpu
def test_attacks_stay_in_ball_on_cuda() -> None:
    from engine.attacks import run_attack

    model, x = _net_and_data("cuda")
    y = torch.arange(64, device="cuda") % 3
    for name in ("fgsm", "pgd", "mim"):
        res = run_attack(name, model, x, y, eps=0.1)
        assert res.x_adv.device.type == "cuda"
        assert float((res.x_adv - x).abs().max()) <= 0.1 + 1e-9
        assert float(res.x_adv.min()) >= 0 and float(res.x_adv.max()) <= 1


@pytest.mark.gpu
def test_headless_run_on_cuda(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from malleability_tui.cli.main import app

    res = CliRunner().invoke(
        app,
        [
            "headless",
            "--dataset",
            "digits",
            "--experiment",
            "train,ntk",
            "--quick",
            "--widths",
            "16",
            "--epochs",
            "3",
            "--device",
            "cuda",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r" / "env.json").read_text())["device"].startswith("cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["relu", "attn"])
def test_batched_trainer_matches_separate_on_cuda(kind: str) -> None:
    """On CUDA, too, the batched trainer follows each network's separate trajectory
    (float64; own batch order, own excluded point, Adam), and both match the CPU's."""
    from engine.models import MLPAttn, TwoLayerNet
    from engine.run.spec import TrainSpec
    from engine.train import train
    from engine.train.batched import train_batched

    g = torch.Generator().manual_seed(0)
    x = torch.rand(45, 8, generator=g, dtype=torch.float64) - 0.3
    y = torch.sign(torch.randn(45, generator=g, dtype=torch.float64))
    cfg = TrainSpec(epochs=6, batch_size=16)
    excludes = [None, 3, 44]

    def build(dev: str, e: int | None):
        if kind == "relu":
            m = TwoLayerNet(8, 16, 1, seed=1, dtype=torch.float64)
        else:
            ctx = x if e is None else torch.cat([x[:e], x[e + 1 :]])
            m = MLPAttn(ctx, 16, 1, seed=1, dtype=torch.float64)
        return m.to(dev)

    weights = {}
    for dev in ("cpu", "cuda"):
        xd, yd = x.to(dev), y.to(dev)
        sep = [build(dev, e) for e in excludes]
        for b, (m, e) in enumerate(zip(sep, excludes)):
            list(train(m, xd, yd, cfg, generator=torch.Generator().manual_seed(b), exclude=e))
        bat = [build(dev, e) for e in excludes]
        gens = [torch.Generator().manual_seed(b) for b in range(len(bat))]
        list(train_batched(bat, xd, yd, cfg, generators=gens, excludes=excludes))
        for s, b in zip(sep, bat):
            for ps, pb in zip(s.parameters(), b.parameters()):
                torch.testing.assert_close(pb, ps, rtol=1e-10, atol=1e-12)
        weights[dev] = [torch.cat([p.detach().flatten() for p in m.parameters()]) for m in bat]
    for wc, wg in zip(weights["cpu"], weights["cuda"]):
        torch.testing.assert_close(wg.cpu(), wc, rtol=1e-8, atol=1e-10)


def test_flush_denormals_zeroes_subnormal_arithmetic_on_cpu_only():
    """Adam's moments of dead units decay into subnormals, which are an order of magnitude
    slower on a CPU; after ``flush_denormals`` arithmetic reads them as zero, and a normal
    number is untouched. A CUDA device leaves the CPU's mode as it is."""
    from engine.device import flush_denormals

    try:
        torch.set_flush_denormal(False)  # earlier tests' run contexts turned it on
        tiny = torch.tensor([1e-40, 1e-30], dtype=torch.float32)  # subnormal, normal
        flush_denormals(torch.device("cuda"))
        assert (tiny * 1.0)[0].item() > 0  # still subnormal arithmetic
        flush_denormals(torch.device("cpu"))
        out = tiny * 1.0
        assert out[0].item() == 0.0
        assert out[1].item() == pytest.approx(1e-30)
    finally:
        torch.set_flush_denormal(False)


def test_a_cpu_run_context_flushes_denormals():
    from engine.run.context import RunContext
    from engine.run.spec import RunSpec

    try:
        torch.set_flush_denormal(False)
        RunContext(RunSpec(device="cpu"))
        assert (torch.tensor([1e-40]) * 1.0).item() == 0.0
    finally:
        torch.set_flush_denormal(False)
