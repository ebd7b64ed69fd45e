"""Adversarial attacks in pixel space: FGSM, PGD, MIM (docs/protocol.md#influence).

Every attack takes x [n, d] in [0, 1] and returns an ``AttackResult`` (x_adv inside
the ε-ball and [0, 1], per-example loss before and after). See ``engine.attacks.base``
for the shared contract: eval mode, input-only gradients (no parameter ``.grad`` is
written), batching. For MLP-Attn the loss is taken through the attention with the
training context C held fixed (the model's buffer is never touched); the flip
protocol recomputes C from the perturbed training set afterwards.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn

from engine.attacks.base import AttackResult, LossFn, eval_mode, loss_from_output, per_example_loss
from engine.attacks.fgsm import fgsm
from engine.attacks.mim import mim
from engine.attacks.pgd import pgd
from engine.errors import ConfigError

ATTACKS = {"fgsm": fgsm, "pgd": pgd, "mim": mim}


def run_attack(
    name: str, model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, eps: float, **opts: Any
) -> AttackResult:
    """Run attack ``name`` (fgsm | pgd | mim) on x [n, d], y [n] with that attack's options."""
    fn = ATTACKS.get(name)
    if fn is None:
        raise ConfigError("attack", name, f"one of {', '.join(ATTACKS)}")
    params = inspect.signature(fn).parameters
    allowed = [p for p in params if params[p].kind is inspect.Parameter.KEYWORD_ONLY and p != "eps"]
    unknown = sorted(set(opts) - set(allowed))
    if unknown:
        raise ConfigError(f"{name} option", unknown[0], f"one of {', '.join(allowed)}")
    return fn(model, x, y, eps=eps, **opts)


__all__ = [
    "ATTACKS",
    "AttackResult",
    "LossFn",
    "eval_mode",
    "fgsm",
    "loss_from_output",
    "mim",
    "per_example_loss",
    "pgd",
    "run_attack",
]
