"""Per-example losses and target encodings shared by the kernel and gradient influences.

Both influence methods measure the change of the same per-example test loss:

- ``mse``: squared error summed over the K outputs, ℓ(f, t) = Σ_k (f_k − t_k)². For a
  binary task (K = 1, targets ±1) this is the training loss of docs/protocol.md#training per example.
- ``ce``: cross-entropy of the logits f. K > 1: −Σ_k t_k log softmax(f)_k with one-hot t
  (= the usual CE with integer labels); K = 1: the logistic loss log(1 + e^{−t f}), t = ±1.

Targets are always encoded as a float matrix [n, K] so that the losses are plain tensor
expressions (vmap-friendly, no integer indexing inside ``torch.func`` transforms).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.errors import ConfigError

LOSSES = ("mse", "ce")


def check_loss(loss: str) -> None:
    if loss not in LOSSES:
        raise ConfigError("loss", loss, f"one of {', '.join(LOSSES)}")


def is_label_tensor(y: torch.Tensor) -> bool:
    """Integer (class-label) targets, as ``Dataset.y_*`` holds for multiclass tasks."""
    return not (y.is_floating_point() or y.is_complex())


def encode_targets(
    y: torch.Tensor,
    n_out: int,
    *,
    centre: bool = False,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Targets → float [n, n_out].

    ``y`` int64 labels [n] → one-hot [n, n_out] (``centre``: minus 1/n_out, i.e. the
    centred one-hot, whose rows sum to zero); float [n] with n_out == 1 → [n, 1];
    float [n, n_out] → unchanged. ``dtype`` defaults to float64 for labels, else y's.
    """
    if is_label_tensor(y):
        if y.ndim != 1:
            raise ConfigError("y", tuple(y.shape), "integer labels of shape [n]")
        if n_out < 2:
            raise ConfigError("n_out", n_out, "≥ 2 for integer class labels")
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= n_out):
            raise ConfigError("y", "labels", f"integers in 0..{n_out - 1}")
        t = F.one_hot(y.long(), n_out).to(dtype or torch.float64)
        return t - 1.0 / n_out if centre else t
    t = y if y.ndim == 2 else y.reshape(-1, 1)
    if t.shape[1] != n_out:
        raise ConfigError("y", tuple(y.shape), f"[n] (one output) or [n, {n_out}]")
    return t.to(dtype or t.dtype)


def infer_n_out(*ys: torch.Tensor) -> int:
    """K from the targets: max label + 1 for integer labels, else the column count."""
    y = ys[0]
    if is_label_tensor(y):
        return max(int(t.max()) for t in ys if t.numel()) + 1
    return 1 if y.ndim == 1 else int(y.shape[1])


def pointwise_loss(f: torch.Tensor, t: torch.Tensor, loss: str) -> torch.Tensor:
    """ℓ(f, t) over the last axis: f, t [..., K] → [...] (see the module docstring)."""
    if loss == "mse":
        return ((f - t) ** 2).sum(-1)
    if loss == "ce":
        if f.shape[-1] == 1:
            return F.softplus(-(t * f)).sum(-1)
        return -(t * torch.log_softmax(f, dim=-1)).sum(-1)
    raise ConfigError("loss", loss, f"one of {', '.join(LOSSES)}")
