"""Per trained cell of a run: the epochs it trained and its last epoch's training loss,
read from the run's events.jsonl (the Metric events). The README's "what the guard let
through" figures (epochs 100-140, loss 0.49-0.56 on uncentred MNIST 3 vs 8) come from it:

    python benchmarks/cell_epochs.py RUN [RUN ...]
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    for run in sys.argv[1:]:
        last: dict[str, tuple[int, float]] = {}
        with open(f"{run}/events.jsonl", encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("kind") == "Metric" and e.get("name") == "train_loss":
                    last[e.get("cell", "")] = (int(e["step"]), float(e["value"]))
        print(run)
        for cell, (step, v) in sorted(last.items()):
            print(f"  {cell}: epochs {step}, train loss {v:.3f}")


if __name__ == "__main__":
    main()
