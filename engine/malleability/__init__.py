"""Influence malleability: the flip-rate protocol and the paper's numbers (docs/protocol.md#influence).

Adversarial training itself lives with the training loops (``engine.train.adversarial``);
the ``advtrain`` experiment measures flip rates of PGD-adversarially trained models.
"""

from engine.malleability.paper import (
    PAPER_FLIP_RATES,
    paper_flip_rate,
    paper_rate_for_run,
    paper_table_for,
)
from engine.malleability.protocol import (
    INTERVENTIONS,
    FlipOptions,
    FlipResult,
    flip_rate,
    flip_rates,
    model_kernel_influence,
    scalar_kernel,
)
from engine.malleability.ranking import RANKINGS, Selection, count_flips, select
from engine.malleability.stats import (
    CI_METHODS,
    clopper_pearson_interval,
    proportion_ci,
    wilson_interval,
)

__all__ = [
    "CI_METHODS",
    "INTERVENTIONS",
    "PAPER_FLIP_RATES",
    "RANKINGS",
    "FlipOptions",
    "FlipResult",
    "Selection",
    "clopper_pearson_interval",
    "count_flips",
    "flip_rate",
    "flip_rates",
    "model_kernel_influence",
    "paper_flip_rate",
    "paper_rate_for_run",
    "paper_table_for",
    "proportion_ci",
    "scalar_kernel",
    "select",
    "wilson_interval",
]
