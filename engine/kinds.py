"""The names of the engine's strategies as ``Literal`` types, each defined once.

Pure typing (no torch), so the spec (``engine.run.spec``, which reads its field
types off these annotations) and the numeric packages share one definition; each tuple
is its type's values in order, for validators and help texts.
"""

from __future__ import annotations

from typing import Literal, get_args

Predictor = Literal["ridge", "flow"]
"""The NTK predictor: kernel ridge regression, or gradient flow to a finite time."""
PREDICTORS: tuple[Predictor, ...] = get_args(Predictor)

NtkMethod = Literal["auto", "structured", "jacobian"]
"""How the empirical NTK is computed (``engine.ntk.empirical``)."""
NTK_METHODS: tuple[NtkMethod, ...] = get_args(NtkMethod)

ModelKind = Literal["relu", "attn", "qkv"]
"""The models of PAPER.md §2 (``engine.models.build_model``)."""
MODEL_KINDS: tuple[ModelKind, ...] = get_args(ModelKind)
MODEL_LABELS: dict[str, str] = {"relu": "2L-ReLU", "attn": "MLP-Attn", "qkv": "QKV-Attn"}
"""Model kind → the display name every table, headline and panel prints."""
