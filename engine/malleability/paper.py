"""The paper's reported flip rates (v1 Tables 2–4, docs/protocol.md#influence), in percent.

Tables 2 (10-class) and 3 (binary: MNIST 3 vs 8, CIFAR-10 automobile vs airplane) give
FGSM / PGD / MIM flip rates under standard training at ε = 0.3; Table 4 the PGD flip
rate under standard → PGD-adversarial training (10-class).
"""

from __future__ import annotations

from engine.models import MODEL_LABELS

# (table, dataset, model label) → {attack: percent}
PAPER_FLIP_RATES: dict[tuple[int, str, str], dict[str, float]] = {
    (2, "mnist", "2L-ReLU"): {"fgsm": 4.1, "pgd": 3.3, "mim": 3.4},
    (2, "mnist", "MLP-Attn"): {"fgsm": 34.6, "pgd": 28.9, "mim": 21.9},
    (2, "cifar10", "2L-ReLU"): {"fgsm": 3.3, "pgd": 3.1, "mim": 3.2},
    (2, "cifar10", "MLP-Attn"): {"fgsm": 26.4, "pgd": 19.1, "mim": 20.5},
    (3, "mnist", "2L-ReLU"): {"fgsm": 8.4, "pgd": 8.4, "mim": 8.6},
    (3, "mnist", "MLP-Attn"): {"fgsm": 25.9, "pgd": 41.0, "mim": 40.5},
    (3, "cifar10", "2L-ReLU"): {"fgsm": 15.2, "pgd": 15.5, "mim": 15.3},
    (3, "cifar10", "MLP-Attn"): {"fgsm": 14.3, "pgd": 14.0, "mim": 14.8},
    (4, "mnist", "2L-ReLU"): {"pgd_standard": 3.3, "pgd_adversarial": 43.4},
    (4, "mnist", "MLP-Attn"): {"pgd_standard": 28.9, "pgd_adversarial": 42.2},
    (4, "cifar10", "2L-ReLU"): {"pgd_standard": 3.1, "pgd_adversarial": 36.5},
    (4, "cifar10", "MLP-Attn"): {"pgd_standard": 19.1, "pgd_adversarial": 38.6},
}
PAPER_TASKS = {2: "multiclass", 3: "binary", 4: "multiclass"}
"""The task of each table (binary: MNIST 3 vs 8, CIFAR-10 classes 1 vs 0)."""
PAPER_BINARY_CLASSES = {"mnist": (3, 8), "cifar10": (1, 0)}


def paper_flip_rate(table: int, dataset: str, model: str, attack: str) -> float | None:
    """The paper's flip rate in percent, or None where it reports none.

    ``model``: a label (2L-ReLU, MLP-Attn) or a kind (relu, attn); ``attack``: fgsm | pgd |
    mim (tables 2, 3) or pgd_standard | pgd_adversarial (table 4).
    """
    label = MODEL_LABELS.get(model, model)
    return PAPER_FLIP_RATES.get((int(table), dataset.lower(), label), {}).get(attack.lower())


def paper_table_for(
    dataset: str, classes: tuple[int, ...] | None, training: str = "standard"
) -> int | None:
    """Which table a run's (data set, classes, training) corresponds to, if any.

    10-class (classes None or all ten) → 2 (standard) or 4 (adversarial); the paper's
    binary pair → 3 (standard only); anything else → None.
    """
    name = dataset.lower()
    if classes is None or len(classes) == 10:
        return 2 if training == "standard" else 4
    pair = PAPER_BINARY_CLASSES.get(name)
    if training == "standard" and pair is not None and tuple(classes) in (pair, pair[::-1]):
        return 3
    return None


def paper_rate_for_run(
    dataset: str, classes: tuple[int, ...] | None, training: str, model: str, attack: str
) -> float | None:
    """The paper's number comparable to one of our cells (percent), or None."""
    table = paper_table_for(dataset, classes, training)
    if table is None:
        return None
    if table == 4:
        return (
            paper_flip_rate(4, dataset, model, f"{attack}_adversarial") if attack == "pgd" else None
        )
    return paper_flip_rate(table, dataset, model, attack)
