"""Device and dtype resolution (``auto`` picks CUDA when present)."""

from __future__ import annotations

import torch

from engine.errors import ConfigError

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(name: str = "auto") -> torch.device:
    """Map ``auto|cpu|cuda[:N]`` to a torch device; ``auto`` is CUDA when available."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError("device", name, "no CUDA device is available here; use auto or cpu")
        return torch.device(name)
    raise ConfigError("device", name, "one of auto, cpu, cuda, cuda:N")
