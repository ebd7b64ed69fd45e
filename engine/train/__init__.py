"""Training loops (docs/protocol.md#training): Adam / SGD / full-batch GD, MSE or cross-entropy, L2."""

from engine.train.loop import (
    BatchTick,
    EpochStats,
    accuracy,
    data_loss,
    evaluate,
    is_classification,
    train,
)

__all__ = [
    "BatchTick",
    "EpochStats",
    "accuracy",
    "data_loss",
    "evaluate",
    "is_classification",
    "train",
]
