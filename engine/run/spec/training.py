"""The ``model``, ``train``, ``qkv`` and ``executor`` sections of a run spec: what is trained, how, and where (docs/protocol.md#defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.kinds import (
    EXECUTORS,
    MODEL_KINDS,
    OPTIMIZERS,
    TRAIN_ENGINES,
    UNTIL,
)
from engine.run.spec.checks import (
    DEFAULT_WIDTHS,
    MAX_EPOCHS,
    MAX_STEP,
    MAX_WIDTH,
    _check,
    _nonneg_float,
    _pos_float,
    _pos_int,
    _width,
)

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class ModelSpec:
    """The two models and their widths."""

    kinds: tuple[str, ...] = ("relu", "attn")
    """Models to compare: relu (2L-ReLU), attn (MLP-Attn), qkv (QKV-Attn, the v2 extension)."""
    widths: tuple[int, ...] = DEFAULT_WIDTHS
    """Hidden widths m (paper: 4 … 4096, powers of two)."""
    sigma_w: float = 0.01
    """First-layer init std σ_w (paper: 0.01)."""
    train_output: bool = False
    """Also train the ±1 output layer (paper: fixed)."""

    def __post_init__(self) -> None:
        kinds = tuple(self.kinds)
        _check(
            len(kinds) >= 1
            and all(k in MODEL_KINDS for k in kinds)
            and len(set(kinds)) == len(kinds),
            "model.kinds",
            self.kinds,
            "a non-empty subset of relu, attn, qkv",
        )
        widths = tuple(self.widths)
        _check(
            len(widths) >= 1 and all(_width(w) for w in widths) and len(set(widths)) == len(widths),
            "model.widths",
            self.widths,
            "distinct positive integers up to 1048576, e.g. 16,1024,4096",
        )
        _check(
            _pos_float(self.sigma_w),
            "model.sigma_w",
            self.sigma_w,
            "a positive number (paper: 0.01)",
        )
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "widths", tuple(sorted(set(widths))))


@dataclass(frozen=True)
class TrainSpec:
    """Optimisation (docs/protocol.md#training)."""

    optimizer: str = "adam"
    """adam (paper), sgd (mini-batch) or gd (full batch)."""
    lr: float = 1e-3
    """Learning rate (paper: 1e-3)."""
    epochs: int = 500
    """Epochs (paper: 500)."""
    batch_size: int = 128
    """Mini-batch size (paper: 128); ignored by gd."""
    l2: float = 1e-3
    """L2 penalty λ, added to the loss as (λ/2)‖θ‖² (paper: λ = 1e-3)."""
    until: str = "fixed"
    """fixed: exactly ``epochs``; converged: from ``epochs`` on, every ``check_every`` epochs read the convergence guard on the last 10 % and on the last 20 % of the epochs, and stop when both hold, when the cell is stuck at its start (never left its initial loss, no fall beyond the noise bound; not converged) or at ``max_epochs`` (ours; ``engine.train.until``)."""
    max_epochs: int = 2000
    """The cap on epochs when until = converged (never below ``epochs``); the guard judges a capped cell as any other."""
    check_every: int = 10
    """Epochs between two checks of the stopping rule when until = converged (the guard on 10 % and on 20 % windows: ``engine.train.until.may_stop``)."""
    batch_networks: int = 64
    """Most same-shaped networks trained side by side in one batched call (influence_check's retrainings; in this process also the seeds of a model and width, their linearized twins, trainability's κ points: each keeps its own data, batches, optimiser state and stop; a chunk also stays under 1 GiB); 1: each network separately (the earlier path)."""

    engine: str = "fused"
    """fused: 2L-ReLU, MLP-Attn and their linearized twins train with the closed-form step (no autograd; several networks stacked in one step), and their attacks and adversarial training take the closed-form input gradient (``engine.models.closed_form``); QKV-Attn with autograd; autograd: every model through autograd, the reference (``engine.train.fused``; speeds in docs/benchmarks-training.md)."""

    def __post_init__(self) -> None:
        _check(
            self.engine in TRAIN_ENGINES,
            "train.engine",
            self.engine,
            f"one of {', '.join(TRAIN_ENGINES)}",
        )
        _check(
            _pos_int(self.batch_networks),
            "train.batch_networks",
            self.batch_networks,
            "a positive integer (1: one network at a time)",
        )
        _check(
            self.optimizer in OPTIMIZERS,
            "train.optimizer",
            self.optimizer,
            f"one of {', '.join(OPTIMIZERS)}",
        )
        _check(_pos_float(self.lr), "train.lr", self.lr, "a positive number (paper: 1e-3)")
        _check(
            _pos_int(self.epochs) and self.epochs <= MAX_EPOCHS,
            "train.epochs",
            self.epochs,
            f"a positive integer up to {MAX_EPOCHS} (paper: 500)",
        )
        _check(
            _pos_int(self.batch_size),
            "train.batch_size",
            self.batch_size,
            "a positive integer (paper: 128)",
        )
        _check(_nonneg_float(self.l2), "train.l2", self.l2, "a number ≥ 0 (paper: 1e-3)")
        _check(self.until in UNTIL, "train.until", self.until, "fixed or converged")
        _check(
            _pos_int(self.max_epochs) and self.max_epochs <= MAX_EPOCHS,
            "train.max_epochs",
            self.max_epochs,
            f"a positive integer up to {MAX_EPOCHS}",
        )
        _check(
            _pos_int(self.check_every), "train.check_every", self.check_every, "a positive integer"
        )


@dataclass(frozen=True)
class ExecutorSpec:
    """Where sweep cells run (docs/guide.md#ray); never changes the numbers."""

    kind: str = "local"
    """local (in this process, one cell after another) or ray (parallel cells)."""
    address: str | None = None
    """Ray cluster address (host:port or ray://…); None: start a local Ray on this machine."""
    max_parallel: int = 0
    """Cells in flight at once (0: as many as the cluster's CPUs allow)."""
    cpus_per_cell: int = 1
    """CPUs (and torch threads) per cell."""
    gpus_per_cell: float = 0.0
    """GPUs per cell (fractions share a GPU); 0: CPU cells."""
    max_retries: int = 1
    """Retries of a cell whose worker died or which raised (then it is recorded as failed)."""

    def __post_init__(self) -> None:
        _check(self.kind in EXECUTORS, "executor.kind", self.kind, "local or ray")
        _check(
            self.address is None or (isinstance(self.address, str) and bool(self.address.strip())),
            "executor.address",
            self.address,
            "host:port of a Ray head node, ray://host:port or auto",
        )
        _check(
            isinstance(self.max_parallel, int)
            and not isinstance(self.max_parallel, bool)
            and self.max_parallel >= 0,
            "executor.max_parallel",
            self.max_parallel,
            "an integer ≥ 0 (0: no limit)",
        )
        _check(
            _pos_int(self.cpus_per_cell),
            "executor.cpus_per_cell",
            self.cpus_per_cell,
            "a positive integer",
        )
        _check(
            _nonneg_float(self.gpus_per_cell),
            "executor.gpus_per_cell",
            self.gpus_per_cell,
            "a number ≥ 0",
        )
        _check(
            isinstance(self.max_retries, int)
            and not isinstance(self.max_retries, bool)
            and 0 <= self.max_retries <= 100,
            "executor.max_retries",
            self.max_retries,
            "an integer in 0…100",
        )
        object.__setattr__(self, "gpus_per_cell", float(self.gpus_per_cell))


@dataclass(frozen=True)
class QKVSpec:
    """QKV-Attn, trainable Q/K/V linearized attention (v2 extension, docs/protocol.md#models)."""

    d_k: int = 0
    """Width d_k of W_Q, W_K, W_V ∈ R^{d×d_k} (0: d_k = d, the v2 setting)."""
    init_std: float = 0.0
    """Std of the projections' init (0: standard, 1/√d)."""
    dk_sweep: tuple[int, ...] = ()
    """ntk: extra d_k values swept at the largest width (empty: none)."""

    def __post_init__(self) -> None:
        _check(
            isinstance(self.d_k, int)
            and not isinstance(self.d_k, bool)
            and 0 <= self.d_k <= MAX_WIDTH,
            "qkv.d_k",
            self.d_k,
            f"an integer from 0 to {MAX_WIDTH} (0: d_k = d)",
        )
        _check(
            _nonneg_float(self.init_std) and self.init_std <= MAX_STEP,
            "qkv.init_std",
            self.init_std,
            f"a number from 0 to {MAX_STEP:g} (0: 1/√d)",
        )
        sweep = tuple(self.dk_sweep)
        _check(
            all(_pos_int(k) for k in sweep),
            "qkv.dk_sweep",
            self.dk_sweep,
            "positive integers, e.g. 8,32,128",
        )
        object.__setattr__(self, "dk_sweep", tuple(sorted(set(sweep))))
