"""RunSpec validation and TOML round trip."""

from __future__ import annotations

import pytest

from engine.errors import ConfigError
from engine.reproduce.presets import apply_quick
from engine.run.spec import DataSpec, FlipSpec, ModelSpec, RunSpec, TrainSpec


def test_round_trip_defaults_and_changes(tmp_path) -> None:
    s = RunSpec()
    assert RunSpec.from_toml(s.to_toml()) == s
    s2 = apply_quick(s).replace(data__classes=(3, 8), flip__eps=(0.1, 0.3), experiment="ntk")
    p = tmp_path / "spec.toml"
    s2.save(p)
    assert RunSpec.load(p) == s2
    assert RunSpec.from_dict(s2.to_dict()) == s2


def test_defaults_match_paper() -> None:
    s = RunSpec()
    assert s.model.widths == tuple(2**k for k in range(2, 13))
    assert (s.train.optimizer, s.train.lr, s.train.batch_size, s.train.epochs, s.train.l2) == (
        "adam",
        1e-3,
        128,
        500,
        1e-3,
    )
    assert s.model.sigma_w == 0.01 and s.flip.eps == (0.3,) and s.flip.top_frac == 0.1


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: ModelSpec(widths=(0, 16)), "model.widths"),
        (lambda: ModelSpec(kinds=("relu", "gpt")), "model.kinds"),
        (lambda: FlipSpec(eps=(0.3, -1.0)), "flip.eps"),
        (lambda: FlipSpec(attacks=("cw",)), "flip.attacks"),
        (lambda: TrainSpec(lr=float("nan")), "train.lr"),
        (lambda: DataSpec(classes=(3, 3)), "data.classes"),
        (lambda: DataSpec(n_train=1), "data.n_train"),
        (lambda: RunSpec(seeds=()), "seeds"),
    ],
)
def test_invalid_values_name_field(make, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        make()
    assert e.value.field == field
    assert field in str(e.value) and "\n" not in str(e.value)


def test_unknown_key_and_bad_toml() -> None:
    with pytest.raises(ConfigError, match="model.depth"):
        RunSpec.from_dict({"model": {"depth": 3}})
    with pytest.raises(ConfigError, match="valid TOML"):
        RunSpec.from_toml("this is = = not toml")
    with pytest.raises(ConfigError, match="readable TOML"):
        RunSpec.load("/nonexistent/spec.toml")


def test_quick_caps_sizes_to_what_the_data_set_has() -> None:
    """digits has 1797 images (≈ 180 a class): 3 vs 8 caps train + test at
    int(0.85 · 2 · 1797 / 10) = 305 in the preset's 3:1 ratio; 10 classes need no cap;
    MNIST (two splits) is never capped; reproduce's binary parts use the same rule."""
    from engine.reproduce.plan import plan
    from engine.reproduce.presets import cap_quick, cap_sizes

    s = cap_sizes("digits", 2, 300, 100)
    assert (s.n_train, s.n_test) == (228, 77) and "n_train 300 → 228" in s.note
    assert cap_sizes("digits", None, 300, 100) == (300, 100, "")
    assert cap_sizes("mnist", 2, 5000, 1000) == (5000, 1000, "")
    spec, note = cap_quick(apply_quick(RunSpec()).replace(data__classes=(3, 8)))
    assert (spec.data.n_train, spec.data.n_test) == (228, 77) and note == s.note
    assert cap_quick(apply_quick(RunSpec())) == (apply_quick(RunSpec()), "")
    binary = plan(("digits",), tables=(3,), quick=True)[1]
    assert (binary.spec.data.n_train, binary.spec.data.n_test) == (
        228,
        77,
    ) and binary.note == s.note
