"""Device and dtype resolution (``auto`` picks CUDA when present)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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


def flush_denormals(device: torch.device) -> None:
    """On a CPU, make float arithmetic flush subnormal numbers to zero, process-wide.

    Why: the weights of an input that is zero in every image (MNIST's border pixels) get
    no data gradient, so the L2 penalty drives them and Adam's moments to zero
    geometrically, through the subnormal range, where x86 arithmetic is an order of
    magnitude slower: after 2000 steps the fused Adam update of a 4096 × 784 layer took
    84 ms against 6 ms flushed (one core, ``benchmarks/bench_subnormals.py``), and a
    width-4096 MNIST cell spent three quarters of its time there
    (docs/benchmarks-training.md#subnormals). A number below 1.2e-38 (float32) or 2.2e-308
    (float64) is far under any quantity the
    tool reports. CUDA kernels are unaffected and left as they are."""
    if device.type == "cpu":
        torch.set_flush_denormal(True)


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """At most ``n`` torch CPU threads inside the block (the count is restored after):
    for work made of small dense ops, where a second thread mostly waits for the first
    (docs/benchmarks.md#influence-check-pbrf)."""
    before = torch.get_num_threads()
    if before <= n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
