"""Training loops (docs/protocol.md#training): Adam / SGD / full-batch GD, MSE or cross-entropy, L2."""

from engine.train.loop import EpochStats, accuracy, data_loss, evaluate, is_classification, train

__all__ = ["EpochStats", "accuracy", "data_loss", "evaluate", "is_classification", "train"]
