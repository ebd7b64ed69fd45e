"""The structured empirical NTK of the two-layer network: Θ_m = (X̃X̃ᵀ) ⊙ (D diag(a²) Dᵀ)/m
in O(n² m), no Jacobian (output convention: ``engine.ntk.empirical``)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engine.errors import ConfigError


def has_structure(model: nn.Module) -> bool:
    """Whether the closed form applies: ``features`` + a TwoLayerNet-like ``head``, and
    no trainable parameter outside the head's W and a (e.g. a trainable attention)."""
    head = getattr(model, "head", None)
    if not (
        callable(getattr(model, "features", None))
        and head is not None
        and isinstance(getattr(head, "weight", None), torch.Tensor)
        and isinstance(getattr(head, "output", None), torch.Tensor)
        and callable(getattr(head, "forward_features", None))
    ):
        return False
    own = {id(head.weight), id(head.output)}
    return all(id(p) in own for p in model.parameters() if p.requires_grad)


def _count_mm(e1: torch.Tensor, e2: torch.Tensor) -> torch.Tensor:
    """e1 [n1, b] @ e2ᵀ for small-integer matrices (entries in {−1, 0, 1}), exactly.

    On CPU int8×int8→int32 (torch._int_mm) is ~4× faster than float32 and exact; on
    other devices (or if unavailable) float32 is exact too, since every partial sum is
    an integer below 2²⁴ (b ≤ 2²⁰ is enforced by the spec's width limit).
    """
    if e1.device.type == "cpu" and hasattr(torch, "_int_mm") and e1.shape[1] == 1:
        # torch._int_mm returns uninitialised memory for an inner dimension of 1 (a last
        # block of one hidden unit, e.g. m = 4097): an int32 outer product instead.
        return e1.to(torch.int32) * e2.to(torch.int32).T
    if e1.device.type == "cpu" and hasattr(torch, "_int_mm"):
        try:
            return torch._int_mm(_as_int8(e1), _as_int8(e2).T)
        except RuntimeError:  # pragma: no cover - depends on the torch build
            pass
    return e1.to(torch.float32) @ e2.to(torch.float32).T


def _as_int8(e: torch.Tensor) -> torch.Tensor:
    """bool → int8 without a copy (both are one byte holding 0/1); else a conversion."""
    return e.view(torch.int8) if e.dtype == torch.bool else e.to(torch.int8)


def structured_ntk(
    model: nn.Module,
    x1: torch.Tensor,
    x2: torch.Tensor | None = None,
    *,
    block_size: int = 4096,
    output: int | None = None,
) -> torch.Tensor:
    """Closed form Θ_m of f = m^{-1/2} ReLU(X̃Wᵀ) a (docs/protocol.md#ntk), see ``empirical_ntk``.

    First layer: Θ_kl = (X̃X̃'ᵀ) ⊙ (D diag(a_k ⊙ a_l) D'ᵀ)/m, D = 1[X̃Wᵀ > 0].
    Output layer (when a is trained): relu(X̃Wᵀ) relu(X̃'Wᵀ)ᵀ/m on the diagonal blocks.
    Hidden units are processed ``block_size`` at a time; for ±1 output weights the
    indicator products are counted exactly in integer arithmetic.
    """
    head: Any = model.head  # nn.Module attributes are dynamic; typed loosely on purpose
    features: Any = model.features
    w, a = head.weight, head.output
    dev, dt = w.device, w.dtype
    m, n_out = a.shape
    if output is not None and not (0 <= int(output) < n_out):
        raise ConfigError("output", output, f"an output index in 0..{n_out - 1}")
    train_w = bool(w.requires_grad)
    train_a = isinstance(a, nn.Parameter) and bool(a.requires_grad)
    same = x2 is None
    with torch.no_grad():
        f1 = features(x1.to(dev, dt))
        f2 = f1 if same or x2 is None else features(x2.to(dev, dt))
        sub = a.detach() if output is None else a.detach()[:, int(output) : int(output) + 1]
        kk = sub.shape[1]  # [m, kk]
        signs = bool(torch.all(sub.abs() == 1))
        pairs = [(k, ll) for k in range(kk) for ll in range(k, kk)]
        # s[(k, l)] = D1 diag(a_k ⊙ a_l) D2ᵀ; with ±1 weights all (k, k) share one count
        s: dict[tuple[int, int], torch.Tensor] = {}
        h: torch.Tensor | None = None
        for lo in range(0, m, block_size):
            hi = min(lo + block_size, m)
            p1 = f1 @ w[lo:hi].T  # [n1, b], reused for D and relu
            p2 = p1 if same else f2 @ w[lo:hi].T
            if train_w:
                d1 = p1 > 0
                d2 = d1 if same else p2 > 0
                _accumulate(s, d1, d2, sub[lo:hi], pairs, signs)
            if train_a:
                r1 = torch.relu(p1)
                r2 = r1 if same else torch.relu(p2)
                h = r1 @ r2.T if h is None else h.addmm_(r1, r2.T)
        # 1/m is folded into the BLAS call (alpha) and the counts multiply in place, so
        # the n1×n2 result takes one elementwise pass instead of three.
        g = _scaled_mm(f1, f2, 1.0 / m) if train_w else None
        if h is not None:
            h.mul_(1.0 / m)
        blocks: dict[tuple[int, int], torch.Tensor] = {}
        for k, ll in pairs:
            if g is not None:
                cnt = s[(0, 0) if signs and k == ll else (k, ll)]
                blk = g.mul_(cnt) if len(pairs) == 1 else g * cnt
            else:
                blk = torch.zeros(f1.shape[0], f2.shape[0], dtype=dt, device=dev)
            if h is not None and k == ll:
                blk.add_(h)  # blk is always a fresh tensor or g used once
            blocks[(k, ll)] = blk
        if kk == 1:
            return blocks[(0, 0)]
        theta = torch.empty(f1.shape[0], f2.shape[0], kk, kk, dtype=dt, device=dev)
        for (k, ll), blk in blocks.items():
            theta[:, :, k, ll] = blk
            theta[:, :, ll, k] = blk
    return theta


def _scaled_mm(f1: torch.Tensor, f2: torch.Tensor, alpha: float) -> torch.Tensor:
    """alpha · f1 f2ᵀ in one BLAS call (beta = 0 ignores the dummy input)."""
    return torch.addmm(f1.new_zeros(()), f1, f2.T, beta=0.0, alpha=alpha)


def _accumulate(
    s: dict[tuple[int, int], torch.Tensor],
    d1: torch.Tensor,
    d2: torch.Tensor,
    a: torch.Tensor,
    pairs: list[tuple[int, int]],
    signs: bool,
) -> None:
    """s[(k, l)] += D1 diag(a_k ⊙ a_l) D2ᵀ for one block of hidden units, k ≤ l.

    a_rk a_rl is symmetric in (k, l), so only k ≤ l is needed. With ±1 weights the
    products have integer partial sums and are counted exactly (``_count_mm``), and
    a_k² = 1 makes every diagonal block the same count D1 D2ᵀ, stored once at (0, 0).
    """

    def add(key: tuple[int, int], v: torch.Tensor) -> None:
        s[key] = v if key not in s else s[key].add_(v)

    if signs:
        add((0, 0), _count_mm(d1, d2))
        i8 = _as_int8(d1)
        for k, ll in pairs:
            if k != ll:
                add((k, ll), _count_mm(i8 * (a[:, k] * a[:, ll]).to(torch.int8), d2))
        return
    f1, f2 = d1.to(a.dtype), d2.to(a.dtype)
    for k, ll in pairs:
        add((k, ll), (f1 * (a[:, k] * a[:, ll])) @ f2.T)
