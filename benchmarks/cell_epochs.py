"""Per trained cell of a run: the epochs it trained and its last epoch's training loss,
read from the run's events.jsonl (the Metric events). The "what the guard let through"
figures (docs/benchmarks.md#verdicts) (epochs 100-140, loss 0.49-0.56 on uncentred MNIST 3 vs 8) come from it:

    python benchmarks/cell_epochs.py RUN [RUN ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.run.runs import train_curves  # noqa: E402


def main() -> None:
    for run in sys.argv[1:]:
        print(run)
        for cell, (steps, losses) in sorted(train_curves(run).items()):
            print(f"  {cell}: epochs {int(steps[-1])}, train loss {losses[-1]:.3f}")


if __name__ == "__main__":
    main()
