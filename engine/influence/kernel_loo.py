"""Kernel leave-one-out influence (Zhang & Zhang 2022; docs/protocol.md#influence).

Kernel ridge regression on the training set: A = K + λI, α = A⁻¹Y (Y [n, K]), test
predictions f_t = k_tᵀα. Removing training point i and refitting gives, with B = A⁻¹,

    A_{−i}⁻¹ = B_{−i,−i} − B_{−i,i} B_{i,−i} / B_ii              (block inverse / Schur)
    α^{(−i)} = α_{−i} − B_{−i,i} α_i / B_ii                    (using B y = α twice)

and, padding α^{(−i)} with a 0 at i (its i-th entry α_i − B_ii α_i/B_ii is indeed 0),
the refit predictions are f_t^{(−i)} = k_tᵀ(α − B e_i α_i / B_ii), i.e.

    Δf_{t,i} = f_t^{(−i)} − f_t = −(k_tᵀ A⁻¹ e_i) · α_i / (A⁻¹)_ii        (per output column)

(``refit_loo`` refits explicitly; the tests check the two agree to 1e-8 in float64).
The influence of i on t is the change in test loss when i is removed,
I[t, i] = ℓ(f_t + Δf_{t,i}, y_t) − ℓ(f_t, y_t): positive = helpful (removing i raises the
loss). One Cholesky factor of A serves all pairs: O(n³ + n² n_test).

Multiclass: integer labels become one-hot (optionally centred) K-column targets, fitted
with one shared scalar kernel (for the fixed ±1 heads of docs/protocol.md#models every diagonal block
Θ_kk of the eNTK equals the scalar kernel; the off-diagonal blocks are dropped, i.e. the
K outputs are regressed independently). The losses are in ``engine.influence.losses``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from engine.errors import ConfigError
from engine.influence.losses import check_loss, encode_targets, infer_n_out, pointwise_loss


def _prepare(
    k_train: torch.Tensor,
    k_test_train: torch.Tensor,
    y_train: torch.Tensor,
    y_test: torch.Tensor,
    lam: float,
    loss: str,
    n_classes: int | None,
    centre: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    check_loss(loss)
    n = k_train.shape[0]
    if k_train.ndim != 2 or k_train.shape[1] != n:
        raise ConfigError("k_train", tuple(k_train.shape), "a square [n_train, n_train] kernel")
    if k_test_train.ndim != 2 or k_test_train.shape[1] != n:
        raise ConfigError("k_test_train", tuple(k_test_train.shape), f"[n_test, {n}]")
    if y_train.shape[0] != n or y_test.shape[0] != k_test_train.shape[0]:
        raise ConfigError(
            "y", (tuple(y_train.shape), tuple(y_test.shape)), "one target per row of the kernels"
        )
    if not (lam > 0):
        raise ConfigError("lam", lam, "a positive ridge λ")
    k_out = n_classes if n_classes is not None else infer_n_out(y_train, y_test)
    dt = k_train.dtype
    ytr = encode_targets(y_train, k_out, centre=centre, dtype=dt).to(k_train.device, dt)
    # the CE test loss needs plain one-hot (or ±1) targets, the squared error the fitted ones
    yte = encode_targets(y_test, k_out, centre=centre and loss == "mse", dtype=dt).to(
        k_train.device, dt
    )
    return ytr, yte


def _cholesky(a: torch.Tensor, lam: float) -> torch.Tensor:
    chol, info = torch.linalg.cholesky_ex(a)
    if int(info.max()) != 0:
        raise ConfigError(
            "lam", lam, "large enough that K + λI is positive definite (K must be PSD)"
        )
    return chol


def _tri_inverse(chol: torch.Tensor, eye: torch.Tensor) -> torch.Tensor:
    """L⁻¹ of a lower-triangular L [n, n]: LAPACK trtri on CPU (n³/3 flops), the triangular
    solve elsewhere.

    trtri runs on one BLAS thread. With its default two threads on a 2-core machine whose
    other core is busy, OpenBLAS's threads wait on each other: n 228 took 70–140 ms a call
    against 1.1–1.8 ms on one thread, n 1000 320–700 ms against 18–34 ms, and one thread
    also beat torch's triangular solve against I (1.6–32 ms at n 228); measured by
    ``benchmarks/bench_tri_inverse.py`` (docs/benchmarks.md#triangular-inverse)."""
    if chol.device.type == "cpu" and chol.dtype in (torch.float64, torch.float32):
        from scipy.linalg import lapack
        from threadpoolctl import threadpool_limits

        trtri = lapack.dtrtri if chol.dtype == torch.float64 else lapack.strtri
        with threadpool_limits(limits=1, user_api="blas"):
            inv, info = trtri(chol.detach().numpy(), lower=1)
        if info == 0:
            return torch.tril(torch.from_numpy(inv))
    return torch.linalg.solve_triangular(chol, eye, upper=False)


def loo_prediction_change(
    k_train: torch.Tensor,
    k_test_train: torch.Tensor,
    y_train: torch.Tensor,
    lam: float,
    *,
    n_classes: int | None = None,
    centre: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Kernel predictions and their leave-one-out changes, without refitting.

    k_train [n, n], k_test_train [t, n], y_train [n] (±1 floats or int labels) or [n, K].
    Returns (f [t, K], Δf [t, n, K]) with Δf[t, i] = f_t^{(−i)} − f_t.
    """
    if k_train.ndim != 2 or k_test_train.ndim != 2 or k_test_train.shape[1] != k_train.shape[0]:
        raise ConfigError(
            "k_test_train",
            tuple(k_test_train.shape),
            "[n_test, n_train] beside k_train [n_train, n_train]",
        )
    k_out = n_classes if n_classes is not None else infer_n_out(y_train)
    ytr = encode_targets(y_train, k_out, centre=centre, dtype=k_train.dtype).to(k_train.device)
    f, kb, c = _loo_factors(k_train, k_test_train, ytr, lam)
    return f, -kb[:, :, None] * c[None, :, :]


def _loo_factors(
    k_train: torch.Tensor, k_test_train: torch.Tensor, ytr: torch.Tensor, lam: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """f = K_test α [t, K], KB = K_test A⁻¹ [t, n], c = α / diag(A⁻¹) [n, K]."""
    n = k_train.shape[0]
    eye = torch.eye(n, dtype=k_train.dtype, device=k_train.device)
    chol = _cholesky(k_train + lam * eye, lam)
    # L⁻¹ once: diag(A⁻¹) = column sums of (L⁻¹)², and A⁻¹ v = L⁻ᵀ(L⁻¹ v) costs O(n²) per vector
    linv = _tri_inverse(chol, eye)
    diag_inv = (linv * linv).sum(0)
    alpha = linv.T @ (linv @ ytr)
    kb = (k_test_train @ linv.T) @ linv
    return k_test_train @ alpha, kb, alpha / diag_inv[:, None]


def ntk_loo_influence(
    k_train: torch.Tensor,
    k_test_train: torch.Tensor,
    y_train: torch.Tensor,
    y_test: torch.Tensor,
    lam: float,
    *,
    loss: str = "mse",
    n_classes: int | None = None,
    centre: bool = False,
    chunk: int = 64,
) -> torch.Tensor:
    """Kernel leave-one-out influence I [n_test, n_train] (positive = helpful).

    k_train Θ(X, X) [n, n] (PSD), k_test_train Θ(X_test, X) [t, n]; y_train / y_test:
    ±1 floats [n] / [t], int labels (one-hot, ``centre`` for the centred one-hot; K from
    ``n_classes`` or the largest label) or float [·, K]. ``loss``: ``mse`` (Σ_k squared
    error, closed form in O(t n K)) or ``ce`` (cross-entropy of the kernel logits,
    evaluated in test chunks of ``chunk`` rows). Computed in the kernels' dtype and device
    (use float64 for ill-conditioned kernels).
    """
    ytr, yte = _prepare(k_train, k_test_train, y_train, y_test, lam, loss, n_classes, centre)
    f, kb, c = _loo_factors(k_train, k_test_train, ytr, lam)
    if loss == "mse":
        # Σ_k (r + Δ)² − r² = Σ_k Δ(2r + Δ) with Δ = −KB[t,i] c[i]: no [t, n, K] tensor needed
        r = f - yte
        return -2.0 * kb * (r @ c.T) + kb * kb * (c * c).sum(1)[None, :]
    out = torch.empty_like(kb)
    for s in range(0, kb.shape[0], chunk):
        fs, ts = f[s : s + chunk], yte[s : s + chunk]
        f_new = fs[:, None, :] - kb[s : s + chunk, :, None] * c[None, :, :]
        out[s : s + chunk] = (
            pointwise_loss(f_new, ts[:, None, :], loss) - pointwise_loss(fs, ts, loss)[:, None]
        )
    return out


def refit_loo(
    k_train: torch.Tensor,
    k_test_train: torch.Tensor,
    y_train: torch.Tensor,
    y_test: torch.Tensor,
    lam: float,
    *,
    loss: str = "mse",
    n_classes: int | None = None,
    centre: bool = False,
    indices: Sequence[int] | None = None,
) -> torch.Tensor:
    """Ground truth: refit kernel ridge without each point i and measure the test-loss change.

    Same arguments and encoding as ``ntk_loo_influence``; ``indices`` (default all) picks
    the removed points. Returns [n_test, len(indices)]. O(n³) per point: small n only.
    """
    ytr, yte = _prepare(k_train, k_test_train, y_train, y_test, lam, loss, n_classes, centre)
    n = k_train.shape[0]
    eye = torch.eye(n, dtype=k_train.dtype, device=k_train.device)
    f = k_test_train @ torch.linalg.solve(k_train + lam * eye, ytr)
    base = pointwise_loss(f, yte, loss)
    idx = range(n) if indices is None else [int(i) for i in indices]
    cols = []
    for i in idx:
        keep = torch.arange(n, device=k_train.device) != i
        a = k_train[keep][:, keep] + lam * eye[: n - 1, : n - 1]
        f_i = k_test_train[:, keep] @ torch.linalg.solve(a, ytr[keep])
        cols.append(pointwise_loss(f_i, yte, loss) - base)
    return torch.stack(cols, dim=1)
