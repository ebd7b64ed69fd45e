"""Wrong-typed spec files, --save-config, --data-dir, divergence, data-dependent errors, duplicates."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from reliability_support import TINY, invoke, one_line_failure, tree

from engine.errors import ConfigError, DivergedError
from engine.run.spec import RunSpec

# Each silently changed the experiment before (or was a traceback): now refused, naming the field.
WRONG_TYPES = [
    ('[model]\ntrain_output = "false"', "model.train_output"),
    ('[data]\ntransductive = "no"', "data.transductive"),
    ('[flip]\nrandom_start = "false"', "flip.random_start"),
    ("[flip]\neps = [true]", "flip.eps"),
    ("[data]\nclasses = [true, false]", "data.classes"),
    ('[spectrum]\ndatasets = "mnist"', "spectrum.datasets"),
    ("device = 5", "device"),
    ("[data]\ndata_dir = 3", "data.data_dir"),
    ('[flip]\neps = "0.3"', "flip.eps"),
    ('device = ["cpu"]', "device"),
    ("[train]\nepochs = 3.5", "train.epochs"),
    ("[model]\nwidths = [16, 16]", "model.widths"),
    ("[train]\nlr = true", "train.lr"),
    ("model = 3", "model"),
]


@pytest.mark.parametrize(("text", "field"), WRONG_TYPES)
def test_wrong_typed_field_is_refused(sandbox: Path, text: str, field: str) -> None:
    cfg = sandbox / "bad.toml"
    cfg.write_text(text + "\n")
    before = tree(sandbox)
    line = one_line_failure(invoke("headless", "--config", cfg))
    assert f"invalid {field}=" in line and str(cfg) in line
    line = one_line_failure(
        invoke("headless", "--config", cfg, "--save-config", sandbox / "out.toml")
    )
    assert f"invalid {field}=" in line
    assert tree(sandbox) == before  # no run folder, no saved config


def test_device_message_matches_the_cli_option() -> None:
    with pytest.raises(ConfigError) as e:
        RunSpec.from_toml("device = 5")
    assert "auto, cpu or cuda" in str(e.value)
    # a right-typed integer where a float goes is fine, and a bool never passes as an int
    assert RunSpec.from_toml("[train]\nlr = 1").train.lr == 1.0
    with pytest.raises(ConfigError, match="train.epochs"):
        RunSpec.from_toml("[train]\nepochs = true")


def test_new_fields_are_typed_from_their_annotation() -> None:
    """The check is generic: every field of every section, whatever its name."""
    import dataclasses

    from engine.run.spec import SECTIONS

    for sec, cls in SECTIONS.items():
        for f in dataclasses.fields(cls):
            default = getattr(cls(), f.name)
            wrong = (
                "not-a-value" if not isinstance(default, str) else -12345
            )  # ntk.ridge takes numbers ≥ 0
            if default is None:
                wrong = {"x": 1}
            with pytest.raises(ConfigError) as e:
                RunSpec.from_dict({sec: {f.name: wrong}})
            assert e.value.field == f"{sec}.{f.name}"


@pytest.mark.parametrize(
    "content", [b"\x00\x01\xff\xfe binary", b"this is = = not toml", b"[model\nwidths = 3"]
)
def test_damaged_config_file(sandbox: Path, content: bytes) -> None:
    cfg = sandbox / "c.toml"
    cfg.write_bytes(content)
    assert str(cfg) in one_line_failure(invoke("headless", "--config", cfg))


def test_save_config_round_trip(sandbox: Path) -> None:
    p = sandbox / "spec.toml"
    res = invoke("headless", *TINY, "--classes", "3,8", "--save-config", p)
    assert res.exit_code == 0, res.output
    res2 = invoke("headless", "--config", p, "--save-config", sandbox / "again.toml")
    assert res2.exit_code == 0, res2.output
    assert RunSpec.load(p) == RunSpec.load(sandbox / "again.toml")


def test_tui_refuses_bad_arguments(sandbox: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from malleability_tui import launch as tui

    (sandbox / "bad.toml").write_text("device = 5\n")
    (sandbox / "broken.toml").write_text("[[[")
    (sandbox / "folder").mkdir()
    for arg, expect in (
        ("bad.toml", "invalid device=5"),
        ("broken.toml", "valid TOML"),
        ("missing", "no such run directory"),
        ("folder", "not a run directory"),
    ):
        monkeypatch.setattr(sys, "argv", ["malleability-tui", arg])
        with pytest.raises(SystemExit) as e:
            tui.main()
        assert e.value.code not in (0, None)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expect in err[0] and "Traceback" not in err[0]


def test_explicit_data_dir_is_never_replaced(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch, shared_data: Path
) -> None:
    monkeypatch.setenv("MALLEABILITY_DATA", str(shared_data))  # mnist is findable here …
    (sandbox / "empty").mkdir()
    line = one_line_failure(
        invoke("headless", *TINY, "--dataset", "mnist", "--data-dir", sandbox / "empty")
    )
    assert "not found in --data-dir" in line and str(sandbox / "empty") in line  # … but not used
    assert not (sandbox / "runs").exists()


def test_finite_divergence_is_a_failure(sandbox: Path) -> None:
    from engine.data import load_dataset
    from engine.models import build_model
    from engine.run.spec import TrainSpec
    from engine.train import train

    ds = load_dataset("digits", classes=(3, 8), n_train=60, n_test=30, seed=0)
    model = build_model("relu", ds.x_train, 16, ds.n_out, sigma_w=0.01, seed=0)
    import torch

    with pytest.raises(DivergedError, match="diverged at epoch"):
        for _ in train(
            model,
            ds.x_train_raw.float(),
            ds.y_train.float(),
            TrainSpec(lr=1e6, epochs=3),
            generator=torch.Generator().manual_seed(0),
        ):
            pass
    line = one_line_failure(
        invoke("headless", *TINY, "--lr", "1e6", "--epochs", "3", "--out", sandbox / "r")
    )
    assert "diverged" in line


@pytest.mark.parametrize(
    ("flag", "value", "expect"),
    [("--classes", "3,42", "no class 42"), ("--n-train", "100000", "lower n_train")],
)
def test_data_dependent_errors_before_the_run_folder(
    sandbox: Path, flag: str, value: str, expect: str
) -> None:
    args = [a for a in TINY]
    args += [flag, value] if flag != "--n-train" else []
    if flag == "--n-train":
        args[args.index("--n-train") + 1] = value
    assert expect in one_line_failure(invoke("headless", *args))
    assert not (sandbox / "runs").exists()


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--widths", "16,16"),
        ("--attacks", "pgd,pgd"),
        ("--eps", "0.3,0.3"),
        ("--seeds", "0,0"),
        ("--models", "relu,relu"),
        ("--classes", "3,8,3"),
        ("--datasets", "mnist,mnist"),
    ],
)
def test_duplicates_in_list_options_are_refused(sandbox: Path, flag: str, value: str) -> None:
    line = one_line_failure(invoke("headless", *TINY, flag, value))
    assert flag in line and "repeated" in line
    assert not (sandbox / "runs").exists()
