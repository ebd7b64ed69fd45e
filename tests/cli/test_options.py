"""One table of run options (malleability_tui/options.py) for the headless command and the
TUI setup form: the parser, the table's agreement with both front ends."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from engine.run.spec import DataSpec, RunSpec
from malleability_tui.cli.main import app
from malleability_tui.options import (
    FORM_OPTIONS,
    RUN_OPTIONS,
    OptionError,
    parse_value,
    spec_changes,
)
from malleability_tui.spec_form import FORM_FIELDS, form_to_spec, spec_to_form


def test_parse_value_known_answers_and_errors():
    assert parse_value("ints", " 16, 1024 ") == (16, 1024)
    assert parse_value("floats", "0.1,0.3") == (0.1, 0.3)
    assert parse_value("names", "FGSM, pgd") == ("fgsm", "pgd")
    assert parse_value("classes", "all") is None and parse_value("classes", "3,8") == (3, 8)
    assert parse_value("path", "  ") is None and parse_value("int", "7") == 7
    assert parse_value("bool", "True") is True and parse_value("lower", "MNIST") == "mnist"
    assert parse_value("int", 5) == 5  # typer already parsed it
    # a data source keeps its path as typed; only the prefix is lower-cased
    assert parse_value("lower", "Folder:/Data/Pets") == "folder:/Data/Pets"
    assert parse_value("names", "mnist,NPZ:/A.npz") == ("mnist", "npz:/A.npz")
    for kind, text, msg in [
        ("ints", "4,x", "comma-separated integers"),
        ("ints", ",", "at least one value"),
        ("ints", "1,1", "each value once (1 is repeated)"),
        ("floats", "a", "comma-separated numbers"),
        ("int", "2.5", "an integer"),
        ("bool", "maybe", "true or false"),
    ]:
        with pytest.raises(OptionError, match=msg.replace("(", r"\(").replace(")", r"\)")):
            parse_value(kind, text)


SAMPLE = {
    "data_dir": "/tmp",
    "experiment": "train",
    "classes": "3,8",
    "n_train": "50",
    "n_test": "20",
    "widths": "4,16",
    "models": "relu",
    "seeds": "0,1",
    "epochs": "3",
    "lr": "0.01",
    "attacks": "fgsm,pgd",
    "eps": "0.1,0.2",
    "address": "host:6379",
    "dataset": "MNIST",
    "qkv_dk": "8",
    "qkv_dk_sweep": "8,32",
    "optimizer": "GD",
    "rtol": "1e-6",
    "datasets": "mnist",
    "device": "cpu",
    "dtype": "float64",
    "center": "true",
    "center_fraction": "0.5",
    "image_size": "28",
    "mode": "RGB",
    "image_column": "img",
    "label_column": "fine",
}

SOURCE_FIELDS = ("image_size", "mode", "image_column", "label_column")


def test_every_option_sets_its_spec_key_and_names_its_flag():
    assert set(SAMPLE) == {o.name for o in RUN_OPTIONS}
    base = RunSpec()
    hf_base = RunSpec(data=DataSpec(name="hf:/data/own"))
    for o in RUN_OPTIONS:
        assert o.flag == "--" + o.name.replace("_", "-")
        section, _, field = o.spec_key.partition("__")
        assert o.error_field == (f"{section}.{field}" if field else section)
        changes = spec_changes({o.name: SAMPLE[o.name]})
        if o.name == "address":
            changes["executor__kind"] = "ray"
        # the source fields are read by an hf: source only (a built-in would ignore them)
        on = hf_base if o.spec_key.removeprefix("data__") in SOURCE_FIELDS else base
        spec = on.replace(**changes)  # the key exists and takes the parsed value
        d = spec.to_dict()
        got = d[section][field] if field else d[section]
        want = changes[o.spec_key]
        assert (tuple(got) if isinstance(got, list) else got) == want, o.name
    with pytest.raises(OptionError, match=r"invalid --widths '4,x': comma-separated integers"):
        spec_changes({"widths": "4,x"})
    assert spec_changes({"widths": "4,16", "n_train": 50, "dataset": None}) == {
        "model__widths": (4, 16),
        "data__n_train": 50,
    }


def test_the_headless_command_takes_its_flags_and_help_from_the_table():
    cmd = typer.main.get_command(app).commands["headless"]  # type: ignore[attr-defined]
    params = {opt: p for p in cmd.params for opt in getattr(p, "opts", [])}
    for o in RUN_OPTIONS:
        assert o.flag in params, o.flag
        assert params[o.flag].help == o.help, o.flag


def test_the_form_shows_the_labelled_options_in_order():
    assert FORM_FIELDS == FORM_OPTIONS and all(o.label for o in FORM_OPTIONS)
    assert [o.name for o in FORM_OPTIONS][:4] == ["data_dir", "experiment", "classes", "n_train"]
    _, errors = form_to_spec(RunSpec(), {**spec_to_form(RunSpec()), "seeds": "1,1"})
    assert errors["seeds"] == "Seeds: each value once (1 is repeated)"


def test_the_cli_and_the_form_refuse_the_same_text_the_same_way():
    res = CliRunner().invoke(app, ["headless", "--widths", "4,x", "--save-config", "/dev/null"])
    assert res.exit_code == 2
    assert "invalid --widths '4,x': comma-separated integers, e.g. 16,1024" in res.output
    _, errors = form_to_spec(RunSpec(), {**spec_to_form(RunSpec()), "widths": "4,x"})
    assert errors["widths"] == "Widths: comma-separated integers, e.g. 16,1024"
