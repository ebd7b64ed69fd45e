"""``data.center``: the training set's per-pixel mean, subtracted before the unit-norm
scaling, for train, test, the models' inputs and the attacked points of the protocol."""

from __future__ import annotations

import pytest
import torch

from engine.data import load_dataset
from engine.errors import ConfigError
from engine.malleability.protocol import rebuild_context
from engine.models import build_model, normalize_rows
from engine.run.spec import DataSpec, ModelSpec, RunSpec

DT = torch.float64


@pytest.fixture(scope="module")
def pair():
    kw = dict(classes=(3, 8), n_train=60, n_test=20, seed=0)
    return load_dataset("digits", **kw), load_dataset("digits", center=True, **kw)


def test_centred_rows_use_the_training_mean(pair):
    plain, cen = pair
    assert plain.pixel_mean is None
    mu = cen.x_train_raw.mean(0)
    assert torch.allclose(cen.pixel_mean, mu)
    assert torch.allclose(cen.x_train, normalize_rows(cen.x_train_raw - mu), atol=1e-12)
    assert torch.allclose(cen.x_test, normalize_rows(cen.x_test_raw - mu), atol=1e-12)  # train mean
    assert torch.equal(cen.x_train_raw, plain.x_train_raw)  # pixels stay pixels (attacks, ε)
    # the centred Gram is not the plain one: the feature cosines fall
    cos_plain = (plain.x_train @ plain.x_train.T).mean()
    cos_cen = (cen.x_train @ cen.x_train.T).mean()
    assert cos_cen < cos_plain - 0.3


@pytest.mark.parametrize("kind", ["relu", "attn"])
def test_models_centre_their_inputs(pair, kind):
    _, cen = pair
    m = build_model(kind, cen.x_train, 16, seed=1, dtype=DT, input_shift=cen.pixel_mean)
    plain = build_model(kind, cen.x_train, 16, seed=1, dtype=DT)
    x = cen.x_test_raw
    # the shifted model on pixels = the unshifted one on pre-centred pixels
    assert torch.allclose(m(x), plain(x - cen.pixel_mean), atol=1e-12)
    assert not torch.allclose(m(x), plain(x), atol=1e-6)


def test_the_protocol_centres_the_points_it_rebuilds_the_context_from(pair):
    _, cen = pair
    m = build_model("attn", cen.x_train, 16, seed=1, dtype=DT, input_shift=cen.pixel_mean)
    rebuilt = rebuild_context(m, cen.x_train_raw, cen.x_test_raw, transductive=False)
    assert torch.allclose(rebuilt.attention.C, m.attention.C, atol=1e-12)


def test_centring_is_refused_with_qkv():
    with pytest.raises(ConfigError, match="data.center"):
        RunSpec(data=DataSpec(center=True), model=ModelSpec(kinds=("relu", "qkv")))
    assert RunSpec(data=DataSpec(center=True)).data.center is True
