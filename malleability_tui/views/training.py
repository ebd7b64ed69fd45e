"""What the Training panel shows: cell labels and metric curves (pure, no Textual)."""

from __future__ import annotations

from malleability_tui.format import MODEL_NAMES


def cell_label(cell: str) -> str:
    """``train/digits/attn/64/0`` → ``MLP-Attn m=64 seed 0 (digits)``."""
    parts = cell.split("/")
    if len(parts) >= 5:
        model = MODEL_NAMES.get(parts[2], parts[2])
        extra = " adversarial" if len(parts) > 5 and parts[5] == "adversarial" else ""
        return f"{model} m={parts[3]} seed {parts[4]} ({parts[1]}){extra}"
    return cell


def metric_series(
    metrics: dict[str, list[tuple[int, float]]], name: str
) -> tuple[list[float], list[float]]:
    pts = metrics.get(name, [])
    return [float(s) for s, _ in pts], [float(v) for _, v in pts]
