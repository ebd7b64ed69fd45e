"""``data.center_fraction``: centring as a knob α ∈ [0, 1] (docs/protocol.md#preprocessing).
α = 0 is the paper's preprocessing and α = 1 the centred one, bit for bit; in between the
rows are x − α·mean, unit-normed; a value outside [0, 1] is one line naming the flag."""

from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

from engine.errors import ConfigError
from engine.models import normalize_rows
from engine.run.context import RunContext
from engine.run.spec import DataSpec, RunSpec
from malleability_tui.cli.main import app

FIELDS = ("x_train", "x_test", "x_train_raw", "x_test_raw", "y_train", "y_test")


def _data(**data):
    spec = RunSpec(data=DataSpec(name="digits", classes=(3, 8), n_train=80, n_test=30, **data))
    return RunContext(spec).dataset(seed=1)


def _same(a, b) -> bool:
    return all(torch.equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


def test_alpha_zero_is_the_paper_protocol_and_one_the_centred_bitwise():
    paper, centred = _data(), _data(center=True)
    zero, one = _data(center_fraction=0.0), _data(center_fraction=1.0)
    assert _same(zero, paper) and zero.pixel_mean is None
    assert _same(one, centred) and torch.equal(one.pixel_mean, centred.pixel_mean)
    assert not torch.equal(paper.x_train, centred.x_train)
    # center = true with the fraction 1 is the same spec; the old key alone means α = 1
    assert _same(_data(center=True, center_fraction=1), centred)
    assert DataSpec(center=True).centring == 1.0 and DataSpec().centring == 0.0


def test_a_fraction_subtracts_that_share_of_the_training_mean():
    half, centred = _data(center_fraction=0.5), _data(center=True)
    mu = half.x_train_raw.mean(0)
    assert torch.allclose(half.pixel_mean, 0.5 * mu, atol=0, rtol=1e-15)
    assert torch.allclose(half.x_train, normalize_rows(half.x_train_raw - 0.5 * mu), atol=1e-12)
    assert torch.allclose(half.x_test, normalize_rows(half.x_test_raw - 0.5 * mu), atol=1e-12)
    # the mean feature cosine falls monotonically with α (what the knob is for)
    cos = [
        float((d.x_train @ d.x_train.T).mean())
        for d in (_data(), _data(center_fraction=0.5), centred)
    ]
    assert cos[0] > cos[1] > cos[2]


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True])
def test_bad_fractions_are_refused_in_the_spec(bad):
    with pytest.raises(ConfigError, match="data.center_fraction"):
        DataSpec(center_fraction=bad)


def test_a_fraction_other_than_one_conflicts_with_center_true():
    with pytest.raises(ConfigError, match="while data.center is true"):
        DataSpec(center=True, center_fraction=0.5)


@pytest.mark.parametrize("bad", ["-0.1", "1.5", "nan"])
def test_bad_fractions_are_one_line_naming_the_flag(bad):
    res = CliRunner().invoke(
        app, ["headless", f"--center-fraction={bad}", "--save-config", "/dev/null"]
    )
    assert res.exit_code != 0
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"invalid --center-fraction {bad}" in lines[0], res.output
    assert "Traceback" not in res.output


def test_the_fraction_round_trips_through_the_config_file(tmp_path):
    spec = RunSpec(data=DataSpec(center_fraction=0.25))
    path = tmp_path / "spec.toml"
    spec.save(path)
    assert RunSpec.load(path).data.centring == 0.25
    old = tmp_path / "old.toml"  # a spec written before the field: center = true still means 1
    old.write_text('[data]\nname = "digits"\ncenter = true\n')
    assert RunSpec.load(old).data.centring == 1.0
