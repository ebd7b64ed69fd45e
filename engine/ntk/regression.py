"""The NTK predictor f_NTK: kernel ridge regression and the finite-time gradient flow."""

from __future__ import annotations

import math

import torch

from engine.errors import ConfigError, EngineError
from engine.kinds import Predictor

_JITTER_TRIES = 6


def _check_shapes(k_train: torch.Tensor, k_test_train: torch.Tensor, y: torch.Tensor) -> None:
    n = k_train.shape[0]
    if k_train.ndim != 2 or k_train.shape[1] != n:
        raise ConfigError("k_train", tuple(k_train.shape), "a square [n, n] kernel")
    if k_test_train.ndim != 2 or k_test_train.shape[1] != n:
        raise ConfigError("k_test_train", tuple(k_test_train.shape), f"[n_test, {n}]")
    if y.ndim not in (1, 2) or y.shape[0] != n:
        raise ConfigError("y_train", tuple(y.shape), f"[{n}] or [{n}, K]")


def cholesky_jitter(a: torch.Tensor) -> torch.Tensor:
    """Lower Cholesky factor of a symmetric [n, n] matrix, adding diagonal jitter if needed.

    Jitter starts at 1e-10·mean(diag) (1e-6· in float32) and grows ×100 for a few
    tries; raises ``EngineError`` when the matrix is not numerically positive definite.
    """
    n = a.shape[0]
    scale = float(a.diagonal().abs().mean()) if n else 1.0
    scale = scale if math.isfinite(scale) and scale > 0 else 1.0
    jitter = scale * (1e-10 if a.dtype == torch.float64 else 1e-6)
    mat = a
    for _ in range(_JITTER_TRIES + 1):
        chol, info = torch.linalg.cholesky_ex(mat)
        if int(info) == 0 and bool(torch.isfinite(chol.diagonal()).all()):
            return chol
        mat = a.clone()
        mat.diagonal().add_(jitter)
        jitter *= 100.0
    raise EngineError(
        f"kernel matrix ({n}×{n}, {a.dtype}) is not positive definite even with jitter "
        f"{jitter / 100:.3g}; raise the ridge λ or use float64"
    )


def kernel_regression(
    k_train: torch.Tensor,
    k_test_train: torch.Tensor,
    y_train: torch.Tensor,
    lam: float,
    *,
    method: Predictor = "ridge",
    t: float | None = None,
) -> torch.Tensor:
    """Kernel predictor at the test points; y_train [n] or [n, K] → [n_test] or [n_test, K].

    ``k_train`` [n, n] = Θ(X, X), ``k_test_train`` [n_test, n] = Θ(X*, X).

    * ``ridge``: f = K*(K + λI)⁻¹ y via Cholesky (jitter retry, ``EngineError`` if not PD).
    * ``flow``: gradient flow on ½‖f − y‖² (+ λ/2 in the kernel's RKHS norm) from f₀ = 0
      to time ``t``: f_t = K*(K + λI)⁻¹(I − e^{−t(K + λI)}) y, via eigendecomposition;
      λ = 0 gives the plain MSE flow K* K⁻¹(I − e^{−tK}) y, and t → ∞ gives ridge.
      Eigenvalues are clipped at 0; (1 − e^{−ts})/s → t as s → 0.
    """
    _check_shapes(k_train, k_test_train, y_train)
    if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam >= 0):
        raise ConfigError("lam", lam, "a finite number ≥ 0")
    y = y_train.to(k_train.dtype)
    y2 = y[:, None] if y.ndim == 1 else y
    # Cholesky and eigh read only the lower triangle, so round-off asymmetry is harmless
    # and no symmetrised copy is made (two fewer n×n passes).
    if method == "ridge":
        a = k_train.clone()
        a.diagonal().add_(lam)
        chol = cholesky_jitter(a)
        alpha = torch.cholesky_solve(y2, chol)
    elif method == "flow":
        if t is None or not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0):
            raise ConfigError("t", t, "a positive finite flow time")
        evals, evecs = torch.linalg.eigh(k_train)
        s = evals.clamp_min(0.0) + lam
        ts = t * s
        small = ts < 1e-8
        # −expm1(−ts)/s is accurate for small ts; the limit is t.
        g = torch.where(
            small, torch.full_like(s, float(t)), -torch.expm1(-ts) / s.clamp_min(1e-300)
        )
        alpha = evecs @ (g[:, None] * (evecs.T @ y2))
    else:
        raise ConfigError("method", method, "ridge or flow")
    pred = k_test_train.to(alpha.dtype) @ alpha
    return pred[:, 0] if y.ndim == 1 else pred
