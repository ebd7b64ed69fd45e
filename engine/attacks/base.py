"""The small base every attack shares: result record, loss, ε-ball, mode and batching.

Inputs ``x`` [n, d] are in pixel space [0, 1] (``Dataset.x_train_raw``); the models
normalise internally, so the ε-ball is taken in pixel units and every iterate is
clamped to [0, 1]. Gradients are taken with respect to the input only (``gradient``:
in closed form for 2L-ReLU and MLP-Attn, else ``torch.autograd.grad``), so parameter
``.grad`` fields are never written and the parameters' ``requires_grad`` flags are left
as they are. During an attack the model is in eval
mode; each module's previous train/eval flag is restored afterwards.

MLP-Attn: the loss is differentiated through the attention map x ↦ Cx̂/‖Cx̂‖ with the
model's context matrix C (a buffer, the training set's X̂ᵀX̂) held fixed: an attack
moves one input at a time against the trained model as it stands and never touches
C. The flip protocol recomputes C from the perturbed training set afterwards
(``MLPAttn.set_context``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from engine.errors import ConfigError
from engine.kinds import NORMS, TRAIN_ENGINES
from engine.models.closed_form import model_input_grad

DEFAULT_ENGINE = TRAIN_ENGINES[0]
"""The input gradient an attack takes without ``engine``: the training default (fused)."""

LossFn = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]
"""loss_fn(model, x [n, d], y [n]) → per-example loss [n]."""

Gradient = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
"""grad(x [n, d], y [n]) → (∇ₓ Σᵢ Lᵢ [n, d], per-example loss L [n]): what an attack's
step reads (``gradient``)."""


@dataclass(frozen=True)
class AttackResult:
    """What an attack returns (all tensors detached, on x's device and dtype)."""

    x_adv: torch.Tensor
    """[n, d] adversarial inputs, inside the ε-ball around x and inside [0, 1]."""
    loss_before: torch.Tensor
    """[n] per-example loss at x."""
    loss_after: torch.Tensor
    """[n] per-example loss at x_adv."""


def loss_from_output(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example training loss [n] of outputs ``out`` [n, K] against ``y`` [n].

    Float targets (±1, binary task, K = 1): squared error (out[:, 0] − y)².
    Integer labels (K classes, K ≥ 2): cross-entropy on the K logits.
    """
    if y.is_floating_point():
        if out.shape[-1] != 1:
            raise ConfigError(
                "y",
                f"float targets for n_out={out.shape[-1]}",
                "integer labels for a multi-output model, or ±1 float targets with n_out = 1",
            )
        return (out[:, 0] - y.to(out.dtype)) ** 2
    if out.shape[-1] < 2:
        raise ConfigError(
            "y", "integer labels for n_out=1", "±1 float targets for a one-output model"
        )
    return F.cross_entropy(out, y, reduction="none")


def per_example_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The training loss of ``model`` at x [n, d] against y [n], one value per example [n]."""
    return loss_from_output(model(x), y)


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """Put every module of ``model`` in eval mode; restore each one's own flag on exit."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, was in modes:
            m.training = was


def _rownorm(t: torch.Tensor, p: float = 2.0) -> torch.Tensor:
    """Per-example norm of t [n, ...] as [n, 1, ...] (broadcasts against t)."""
    return t.flatten(1).norm(p=p, dim=1).view(-1, *([1] * (t.ndim - 1)))


def ascent_direction(g: torch.Tensor, norm: str) -> torch.Tensor:
    """Steepest-ascent unit step for gradient g [n, d]: sign(g) (ℓ∞) or g/‖g‖₂ (ℓ2)."""
    if norm == "linf":
        return g.sign()
    return g / _rownorm(g).clamp_min(torch.finfo(g.dtype).tiny)


class Ball:
    """The ε-ball around x [n, d] intersected with the pixel box [0, 1]."""

    def __init__(self, x: torch.Tensor, eps: float, norm: str) -> None:
        self.x, self.eps, self.norm = x, float(eps), norm
        if norm == "linf":
            # Both sets are boxes, so their intersection is a box and one clamp is
            # the exact projection (and cheaper than clip-delta-then-clip-pixels).
            self.lo = (x - self.eps).clamp_(min=0.0)
            self.hi = (x + self.eps).clamp_(max=1.0)

    def project(self, z: torch.Tensor) -> torch.Tensor:
        """Nearest point of the set (ℓ∞: exact); ℓ2: rescale δ = z − x, then clamp to [0, 1]."""
        if self.norm == "linf":
            return torch.clamp(z, self.lo, self.hi)
        d = z - self.x
        # eps/0 = inf clamps to 1, so a zero delta stays zero (no NaN).
        d = d * (self.eps / _rownorm(d)).clamp(max=1.0)
        # x ∈ [0, 1] so clamping only shrinks each |δ_j|: the ℓ2 bound survives.
        return (self.x + d).clamp_(0.0, 1.0)

    def random_point(self, generator: torch.Generator | None) -> torch.Tensor:
        """A random start: uniform in the ℓ∞ box, or uniform in the ℓ2 ball; then [0, 1]."""
        x = self.x
        dev = generator.device if generator is not None else x.device
        if self.norm == "linf":
            u = torch.rand(x.shape, generator=generator, device=dev, dtype=x.dtype).to(x.device)
            return self.project(x + (2.0 * u - 1.0) * self.eps)
        g = torch.randn(x.shape, generator=generator, device=dev, dtype=x.dtype).to(x.device)
        r = torch.rand((x.shape[0],), generator=generator, device=dev, dtype=x.dtype).to(x.device)
        d = x[0].numel()
        # radius eps·U^(1/d) makes the point uniform in the ball's volume
        radius = (self.eps * r.pow(1.0 / d)).view(-1, *([1] * (x.ndim - 1)))
        step = g / _rownorm(g).clamp_min(torch.finfo(g.dtype).tiny) * radius
        return self.project(x + step)


def input_grad(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn: LossFn
) -> tuple[torch.Tensor, torch.Tensor]:
    """(∇ₓ Σᵢ Lᵢ [n, d], per-example loss L [n]) at x; nothing is written to parameters.

    Each example's loss depends on its own input only, so the gradient of the sum is
    every per-example gradient at once, for the cost of one backward pass.
    """
    xv = x.detach().requires_grad_(True)
    loss = loss_fn(model, xv, y)
    (g,) = torch.autograd.grad(loss.sum(), xv)
    return g, loss.detach()


def gradient(model: nn.Module, loss_fn: LossFn | None, engine: str = DEFAULT_ENGINE) -> Gradient:
    """The input gradient an attack steps along: the closed form of
    ``engine.models.closed_form`` for a 2L-ReLU or MLP-Attn ``model`` under its training
    loss (``loss_fn`` None or ``per_example_loss``) when ``engine`` is "fused" (as
    ``train.engine``); else ``input_grad`` through torch.autograd (the reference, and
    QKV-Attn's path). It reads the model's tensors (an in-place update shows)."""
    check_engine(engine)
    if engine == "fused" and loss_fn in (None, per_example_loss):
        closed = model_input_grad(model)
        if closed is not None:
            return closed
    loss = loss_fn or per_example_loss

    def grad(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return input_grad(model, x, y, loss)

    return grad


def eval_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn: LossFn) -> torch.Tensor:
    """Per-example loss [n] at x without building a graph."""
    with torch.no_grad():
        return loss_fn(model, x, y).detach()


def check_norm(norm: str) -> None:
    if norm not in NORMS:
        raise ConfigError("norm", norm, "linf or l2")


def check_engine(engine: str) -> None:
    if engine not in TRAIN_ENGINES:
        raise ConfigError("engine", engine, " or ".join(TRAIN_ENGINES))


def check_positive(field: str, value: object) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (ok and math.isfinite(float(value)) and float(value) > 0):  # type: ignore[arg-type]
        raise ConfigError(field, value, "a positive finite number")
    return float(value)  # type: ignore[arg-type]


def check_count(field: str, value: object) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        raise ConfigError(field, value, "a positive integer")
    return int(value)


BatchFn = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


def run_batched(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    one_batch: BatchFn,
    *,
    eps: float,
    batch_size: int,
) -> AttackResult:
    """Validate x [n, d] / y [n], then run ``one_batch(xb, yb)`` over batches in eval mode.

    ``one_batch`` returns (x_adv, loss_before, loss_after) for its batch. Grad mode is
    switched on here, so callers may sit inside ``torch.no_grad()`` or inference mode.
    """
    check_positive("eps", eps)
    bs = check_count("batch_size", batch_size)
    if x.ndim < 2:
        raise ConfigError("x", tuple(x.shape), "a batch of inputs [n, d]")
    if y.shape[:1] != x.shape[:1]:
        raise ConfigError("y", tuple(y.shape), f"one target per input ([{x.shape[0]}])")
    if not x.is_floating_point():
        raise ConfigError("x", x.dtype, "a floating-point tensor of pixels in [0, 1]")
    n = x.shape[0]
    if n and (bool(x.min() < 0) or bool(x.max() > 1)):
        raise ConfigError(
            "x",
            f"values in [{float(x.min()):.3g}, {float(x.max()):.3g}]",
            "pixel-space inputs in [0, 1] (Dataset.x_train_raw)",
        )
    y = y.to(x.device)
    parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    with torch.inference_mode(False), torch.enable_grad(), eval_mode(model):
        for i in range(0, n, bs):
            # clone: a slice of an inference-mode tensor cannot enter autograd
            xb = x[i : i + bs].clone() if x.is_inference() else x[i : i + bs]
            yb = y[i : i + bs].clone() if y.is_inference() else y[i : i + bs]
            parts.append(one_batch(xb.detach(), yb))
    if not parts:
        empty = x.new_zeros((0,))
        return AttackResult(x.detach().clone(), empty, empty.clone())
    xs, l0, l1 = zip(*parts)
    return AttackResult(torch.cat(xs), torch.cat(l0), torch.cat(l1))
