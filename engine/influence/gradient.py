"""Gradient-based influence (Koh & Liang 2017) on a model's trainable parameters.

Training objective R(θ) = (1/n) Σ_j ℓ(f_θ(x_j), y_j) + (λ/2)‖θ‖² (the L2 penalty of
docs/protocol.md#training), Hessian H = ∇²R = (1/n) Σ_j ∇²ℓ_j + λI. Up-weighting point i by ε moves the
minimiser by dθ/dε = −H⁻¹∇ℓ_i; removing it is ε = −1/n, so Δθ ≈ (1/n) H⁻¹∇ℓ_i and the
test loss changes by

    I[t, i] = Δℓ_t ≈ (1/n) ∇ℓ_tᵀ H⁻¹ ∇ℓ_i                                  (*)

i.e. −(1/n) times Koh & Liang's I_up,loss = −∇ℓ_tᵀH⁻¹∇ℓ_i. Positive = helpful (removing i
raises the test loss), the sign convention of ``ntk_loo_influence``. (*) is exact to
first order at a minimiser of R; away from one it is the usual approximation.

H⁻¹∇ℓ_t is computed once per test point: ``exact`` forms the [P, P] Hessian (small
models), ``cg`` runs conjugate gradients on Hessian-vector products (forward-over-reverse,
``torch.func.jvp`` of ``torch.func.grad``), ``lissa`` the stochastic Neumann recursion of
Agarwal et al. (2017). For a ReLU network with fixed output weights ∇²f = 0 almost
everywhere, so H is a PSD Gauss–Newton matrix plus λI and CG applies.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.func import functional_call, grad, hessian, jacrev, jvp, vmap

from engine.errors import ConfigError
from engine.influence.losses import check_loss, encode_targets, pointwise_loss

METHODS = ("exact", "cg", "lissa")


class _Flat:
    """The model as a function of one flat vector θ [P] of its trainable parameters."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        named = [(k, v) for k, v in model.named_parameters() if v.requires_grad]
        if not named:
            raise ConfigError("model", type(model).__name__, "a model with trainable parameters")
        self.names = [k for k, _ in named]
        self.shapes = [v.shape for _, v in named]
        self.sizes = [v.numel() for _, v in named]
        self.theta = torch.cat([v.detach().reshape(-1) for _, v in named])
        frozen = {k: v.detach() for k, v in model.named_parameters() if not v.requires_grad}
        self.consts = {**frozen, **{k: v.detach() for k, v in model.named_buffers()}}

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        parts = torch.split(theta, self.sizes)
        params = {k: p.reshape(s) for k, p, s in zip(self.names, parts, self.shapes)}
        out = functional_call(self.model, (params, self.consts), (x,))
        return out if out.ndim == 2 else out.reshape(x.shape[0], -1)


def _per_example_grads(
    flat: _Flat, x: torch.Tensor, t: torch.Tensor, loss: str, chunk: int
) -> torch.Tensor:
    """∇_θ ℓ(f(x_j), t_j) for every row: [n, P]."""

    def one(theta: torch.Tensor, xj: torch.Tensor, tj: torch.Tensor) -> torch.Tensor:
        return pointwise_loss(flat.forward(theta, xj[None]), tj[None], loss).sum()

    g = vmap(grad(one), in_dims=(None, 0, 0))
    return torch.cat(
        [g(flat.theta, x[s : s + chunk], t[s : s + chunk]) for s in range(0, x.shape[0], chunk)]
    )


def _objective(flat: _Flat, x: torch.Tensor, t: torch.Tensor, loss: str, lam: float) -> Callable:
    def r(theta: torch.Tensor) -> torch.Tensor:
        return (
            pointwise_loss(flat.forward(theta, x), t, loss).mean()
            + 0.5 * lam * (theta * theta).sum()
        )

    return r


def _hvp_fn(r: Callable, theta: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """V [b, P] → (H V ᵀ)ᵀ [b, P] by forward-over-reverse products, vmapped over rows."""

    def hvp(v: torch.Tensor) -> torch.Tensor:
        return jvp(grad(r), (theta,), (v,))[1]

    return vmap(hvp)


def conjugate_gradient(
    matvec: Callable[[torch.Tensor], torch.Tensor],
    b: torch.Tensor,
    *,
    tol: float = 1e-10,
    maxiter: int = 1000,
) -> tuple[torch.Tensor, int]:
    """Solve H x = b for each row of b [k, P] (H SPD, given by ``matvec`` on [k, P]).

    Independent CG per row, stopped when every ‖r‖ ≤ tol·‖b‖. Returns (x [k, P], iterations).
    """
    x = torch.zeros_like(b)
    r = b.clone()
    p = r.clone()
    rs = (r * r).sum(1)
    stop = (tol * b.norm(dim=1)) ** 2
    it = 0
    while it < maxiter and bool((rs > stop).any()):
        hp = matvec(p)
        active = rs > stop
        # converged rows take zero steps (their rs may be 0, which would divide by zero)
        a = torch.where(active, rs / (p * hp).sum(1).clamp_min(torch.finfo(b.dtype).tiny), 0.0)
        x = x + a[:, None] * p
        r = r - a[:, None] * hp
        rs_new = (r * r).sum(1)
        beta = torch.where(active, rs_new / rs.clamp_min(torch.finfo(b.dtype).tiny), 0.0)
        p = r + beta[:, None] * p
        rs = rs_new
        it += 1
    return x, it


def _power_top_eig(
    matvec: Callable, p: int, like: torch.Tensor, iters: int, gen: torch.Generator | None
) -> float:
    v = torch.randn(1, p, generator=gen, dtype=like.dtype, device="cpu").to(like.device)
    v = v / v.norm()
    lam = 0.0
    for _ in range(iters):
        w = matvec(v)
        lam = float((w * v).sum())
        v = w / w.norm().clamp_min(torch.finfo(like.dtype).tiny)
    return lam


def gradient_influence(
    model: nn.Module,
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    *,
    lam: float,
    loss: str = "mse",
    method: str = "exact",
    cg_tol: float = 1e-10,
    cg_maxiter: int = 1000,
    lissa_depth: int = 1000,
    lissa_scale: float | None = None,
    lissa_batch: int | None = None,
    generator: torch.Generator | None = None,
    chunk: int = 256,
    train_indices: torch.Tensor | list[int] | None = None,
    gauss_newton: bool = False,
) -> torch.Tensor:
    """Influence I [n_test, n_train] = (1/n) ∇ℓ_tᵀ H⁻¹ ∇ℓ_i (positive = helpful), with H = ∇²R
    the Hessian of the whole training objective, the L2 term's λI included (module docstring).

    ``model`` maps x [n, d] → [n, K] (or [n]); its parameters with ``requires_grad`` are θ,
    buffers and frozen parameters stay constant; it is not modified. y: ±1 floats, int
    labels (one-hot) or float [n, K]; ``loss`` ``mse`` or ``ce`` (engine.influence.losses).
    ``lam`` is the training L2 coefficient λ: H = (1/n) Σ_j ∇²ℓ_j + λI, so λ is also the
    damping (no second damping term is added).
    ``method``: ``exact`` (dense Hessian, P ≲ a few thousand), ``cg`` (tolerance ``cg_tol``
    relative, at most ``cg_maxiter`` HVPs per test point, batched), ``lissa`` (``lissa_depth``
    steps h ← v + h − H_B h / s with s = ``lissa_scale`` (default 1.1 × top eigenvalue by
    power iteration) and H_B on a random mini-batch of ``lissa_batch`` points drawn with
    ``generator`` (None: full batch, deterministic)). Runs on the parameters' device/dtype.
    ``train_indices``: only those training points' columns, [n_test, k]: H is symmetric, so
    the k systems H x = ∇ℓ_i are solved instead of the n_test systems H x = ∇ℓ_t (cheaper
    when k < n_test; the same numbers up to the solver's tolerance).
    ``gauss_newton`` (``exact`` only): the caller asserts that H is its Gauss–Newton
    matrix plus λI, i.e. ∇²f = 0 (a ReLU layer under fixed output weights, a.e.); the
    exact solve then runs on the [nK, nK] kernel instead of the [P, P] Hessian
    (``_gauss_newton_solve``), the same numbers to round-off at any P.
    """
    check_loss(loss)
    if method not in METHODS:
        raise ConfigError("method", method, f"one of {', '.join(METHODS)}")
    if not (lam > 0):
        raise ConfigError("lam", lam, "a positive L2 / damping coefficient")
    flat = _Flat(model)
    dev, dt = flat.theta.device, flat.theta.dtype
    xtr, xte = x_train.to(dev, dt), x_test.to(dev, dt)
    with torch.no_grad():
        k_out = int(flat.forward(flat.theta, xtr[:1]).shape[1])
    ttr = encode_targets(y_train, k_out, dtype=dt).to(dev, dt)
    tte = encode_targets(y_test, k_out, dtype=dt).to(dev, dt)
    g_train = _per_example_grads(flat, xtr, ttr, loss, chunk)
    g_test = _per_example_grads(flat, xte, tte, loss, chunk)
    r = _objective(flat, xtr, ttr, loss, lam)
    n = xtr.shape[0]
    if train_indices is not None:
        idx = torch.as_tensor(train_indices, dtype=torch.long, device=dev)
        rhs, other = g_train[idx], g_test  # solve for the chosen training points
    else:
        rhs, other = g_test, g_train

    if method == "exact" and gauss_newton:
        return _gauss_newton_solve(flat, xtr, ttr, xte, tte, loss, lam, train_indices)
    if method == "exact":
        h = hessian(r)(flat.theta)
        s = torch.linalg.solve(0.5 * (h + h.T), rhs.T).T
    elif method == "cg":
        s, _ = conjugate_gradient(_hvp_fn(r, flat.theta), rhs, tol=cg_tol, maxiter=cg_maxiter)
    else:
        s = _lissa(flat, xtr, ttr, loss, lam, rhs, lissa_depth, lissa_scale, lissa_batch, generator)
    return (other @ s.T / n) if train_indices is not None else (s @ other.T / n)


def _gauss_newton_solve(
    flat: _Flat,
    xtr: torch.Tensor,
    ttr: torch.Tensor,
    xte: torch.Tensor,
    tte: torch.Tensor,
    loss: str,
    lam: float,
    train_indices: torch.Tensor | list[int] | None,
) -> torch.Tensor:
    """(*) with H = λI + Jᵀ A J exactly (J [nK, P] the stacked per-example Jacobians of f,
    A = blockdiag(∇²_f ℓ_j) / n): by the push-through identity H⁻¹Jᵀ = Jᵀ(λI + A J Jᵀ)⁻¹,
    H⁻¹∇ℓ_i = Jᵀ(λI + A K)⁻¹ E_i with K = J Jᵀ [nK, nK] the empirical NTK and E_i the
    column holding ∇_f ℓ_i in block i, so I[t, i] = (1/n) ∇_f ℓ_tᵀ J_t Jᵀ(λI + A K)⁻¹ E_i.
    Cost n²KP + (nK)³ instead of P³. Returns [n_test, n_train] (or [n_test, k])."""
    n, t = xtr.shape[0], xte.shape[0]

    def jac(x: torch.Tensor) -> torch.Tensor:  # [b, K, P], f's Jacobian per example
        one = lambda th, xj: flat.forward(th, xj[None])[0]  # noqa: E731
        return vmap(jacrev(one), in_dims=(None, 0))(flat.theta, x)

    def out_grads(x: torch.Tensor, tg: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(∇_f ℓ [b, K], ∇²_f ℓ [b, K, K]) at θ."""
        with torch.no_grad():
            f = flat.forward(flat.theta, x)
        one = lambda fj, tj: pointwise_loss(fj[None], tj[None], loss)[0]  # noqa: E731
        return vmap(grad(one))(f, tg), vmap(hessian(one))(f, tg)

    jtr, jte = jac(xtr), jac(xte)
    k_out = jtr.shape[1]
    jtr2 = jtr.reshape(n * k_out, -1)
    ktr = jtr2 @ jtr2.T  # [nK, nK]
    kte = jte.reshape(t * k_out, -1) @ jtr2.T  # [tK, nK]
    e_tr, h_tr = out_grads(xtr, ttr)
    e_te, _ = out_grads(xte, tte)
    a = torch.block_diag(*h_tr) / n  # [nK, nK]
    cols = torch.arange(n, device=xtr.device)
    if train_indices is not None:
        cols = torch.as_tensor(train_indices, dtype=torch.long, device=xtr.device)
    rhs = torch.zeros(n, k_out, cols.numel(), dtype=xtr.dtype, device=xtr.device)
    rhs[cols, :, torch.arange(cols.numel(), device=xtr.device)] = e_tr[cols]
    eye = torch.eye(n * k_out, dtype=xtr.dtype, device=xtr.device)
    s = torch.linalg.solve(lam * eye + a @ ktr, rhs.reshape(n * k_out, -1))  # [nK, k]
    u = (kte @ s).reshape(t, k_out, -1)  # J_t H⁻¹∇ℓ_i [t, K, k]
    return (e_te[:, :, None] * u).sum(1) / n


def _lissa(
    flat: _Flat,
    x: torch.Tensor,
    t: torch.Tensor,
    loss: str,
    lam: float,
    v: torch.Tensor,
    depth: int,
    scale: float | None,
    batch: int | None,
    gen: torch.Generator | None,
) -> torch.Tensor:
    """H⁻¹v ≈ h_J / s with h_0 = v, h_j = v + h_{j−1} − H_B h_{j−1} / s (needs s > λ_max(H))."""
    n = x.shape[0]
    full = _hvp_fn(_objective(flat, x, t, loss, lam), flat.theta)
    if scale is None:
        scale = 1.1 * _power_top_eig(full, flat.theta.numel(), flat.theta, 50, gen)
    if not (scale > 0):
        raise ConfigError(
            "lissa_scale", scale, "a positive number above the top Hessian eigenvalue"
        )
    h = v.clone()
    for _ in range(depth):
        if batch is None or batch >= n:
            hv = full(h)
        else:
            idx = torch.randperm(n, generator=gen)[:batch].to(x.device)
            hv = _hvp_fn(_objective(flat, x[idx], t[idx], loss, lam), flat.theta)(h)
        h = v + h - hv / scale
    return h / scale
