"""make_synthetic hits the asked spectrum exactly; load_dataset('synthetic') is a normal Dataset."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.data import load_dataset, make_synthetic
from engine.errors import ConfigError


@pytest.mark.parametrize("n,d", [(30, 50), (60, 12)])
@pytest.mark.parametrize("spectrum", ["geometric", "linear"])
def test_gram_spectrum_is_exact(n: int, d: int, spectrum: str) -> None:
    s = make_synthetic(n, d, kappa=1234.5, spectrum=spectrum, seed=3)
    r = min(n, d)
    eig = torch.linalg.eigvalsh(s.x @ s.x.T).flip(0)  # independent of how x was built
    np.testing.assert_allclose(eig[:r].numpy(), s.eigenvalues.numpy(), rtol=1e-9, atol=1e-9)
    assert abs(float(eig[0] / eig[r - 1]) / 1234.5 - 1) < 1e-8
    assert np.abs(eig[r:].numpy()).max(initial=0.0) < 1e-9 * float(eig[0])  # rank r
    assert s.kappa == pytest.approx(1234.5, rel=1e-12)
    assert float(s.eigenvalues.sum()) == pytest.approx(n, rel=1e-12)  # mean squared row norm 1
    np.testing.assert_allclose((s.u.T @ s.u).numpy(), np.eye(r), atol=1e-12)
    np.testing.assert_allclose((s.v.T @ s.v).numpy(), np.eye(r), atol=1e-12)


def test_labels_are_the_sign_of_the_direction_and_seeded() -> None:
    s = make_synthetic(40, 10, kappa=10.0, seed=0)
    np.testing.assert_array_equal(
        s.y.numpy(), np.where((s.x @ s.direction).numpy() >= 0, 1.0, -1.0)
    )
    assert float(s.direction.norm()) == pytest.approx(1.0)
    t = make_synthetic(40, 10, kappa=10.0, seed=0)
    assert torch.equal(s.x, t.x) and not torch.equal(
        s.x, make_synthetic(40, 10, kappa=10.0, seed=1).x
    )
    top = make_synthetic(40, 10, kappa=10.0, direction="top", seed=0)
    # labels along V's first column equal the sign of U's first column (the top eigenvector of G)
    np.testing.assert_array_equal(top.y.numpy(), np.where(top.u[:, 0].numpy() >= 0, 1.0, -1.0))


def test_explicit_spectrum_and_errors() -> None:
    lam = [4.0, 2.0, 1.0]
    s = make_synthetic(3, 8, kappa=None, spectrum=lam, normalize_trace=False, seed=0)
    np.testing.assert_allclose(torch.linalg.eigvalsh(s.x @ s.x.T).flip(0).numpy(), lam, rtol=1e-10)
    with pytest.raises(ConfigError, match="spectrum"):
        make_synthetic(3, 8, kappa=None, spectrum=[1.0, 2.0])
    with pytest.raises(ConfigError, match="kappa"):
        make_synthetic(3, 8, kappa=0.5)
    with pytest.raises(ConfigError, match="kappa"):
        make_synthetic(3, 8, kappa=5.0, spectrum=lam)
    with pytest.raises(ConfigError, match="spectrum"):
        make_synthetic(3, 8, spectrum="flat")


def test_load_dataset_synthetic_is_consistent_with_the_others() -> None:
    ds = load_dataset("synthetic", n_train=40, n_test=20, seed=0)
    assert ds.task == "binary" and ds.d == 64 and ds.class_names == ("positive", "negative")
    assert ds.x_train_raw.min() >= 0 and ds.x_train_raw.max() <= 1
    np.testing.assert_allclose(ds.x_train.norm(dim=1).numpy(), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(ds.y_train.numpy(), np.where(ds.labels_train == 0, 1.0, -1.0))
    assert any("change its spectrum" in n for n in ds.notes)
    assert (ds.labels_train == 0).sum() == 20
