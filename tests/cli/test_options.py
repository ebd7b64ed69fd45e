"""One table of run options (malleability_tui/options.py) for the headless command and the
TUI setup form: the parser, the table's agreement with both front ends."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from engine.run.spec import DataSpec, RunSpec
from malleability_tui.cli.main import app
from malleability_tui.cli.reproduce import REPRODUCE_OPTIONS
from malleability_tui.options import (
    BY_NAME,
    FORM_OPTIONS,
    HEADLESS_OPTIONS,
    RUN_OPTIONS,
    SOURCE_OPTIONS,
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
    "executor": "Local",
    "max_parallel": "2",
    "cpus_per_cell": "1",
    "gpus_per_cell": "0.5",
    "max_epochs": "900",
    "adv_recipe": "fgsm_rs",
    "engine": "autograd",
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
        if o.name in ("address", "max_parallel", "cpus_per_cell", "gpus_per_cell"):
            changes["executor__kind"] = "ray"  # Ray's knobs
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


def params_of(*command: str) -> dict[str, Any]:
    cmd: Any = typer.main.get_command(app)
    for name in command:
        cmd = cmd.commands[name]
    return {opt: p for p in cmd.params for opt in getattr(p, "opts", [])}


@pytest.mark.parametrize(
    ("command", "options"),
    [
        (("headless",), HEADLESS_OPTIONS),
        (("reproduce",), REPRODUCE_OPTIONS),
        (("data", "show"), SOURCE_OPTIONS),
    ],
)
def test_the_commands_take_their_flags_and_help_from_the_table(command, options):
    params = params_of(*command)
    for o in options:
        assert o.flag in params, o.flag
        p = params[o.flag]
        assert p.help == o.help and p.name == o.name and p.default == o.default, o.flag
        assert (o.short in p.opts) if o.short else len(p.opts) == 1, o.flag
    assert {o.name for o in HEADLESS_OPTIONS} == {o.name for o in RUN_OPTIONS if o.headless}
    # reproduce shows some in its own words; the flag, spec key and parser stay one
    for o in REPRODUCE_OPTIONS:
        base = BY_NAME[o.name]
        assert (o.flag, o.spec_key, o.kind) == (base.flag, base.spec_key, base.kind)


def test_a_declared_option_reaches_the_spec_through_the_cli(tmp_path):
    """Every headless option, given as its flag, lands in the saved spec: the generated
    parameters, the values handed to the command and the spec changes agree."""

    from engine.run.spec import RunSpec as Spec

    args: list[str] = ["--dataset", "hf:/data/own"]
    skip = {"dataset", "center", "executor", "address", "max_parallel", "cpus_per_cell",
            "gpus_per_cell", "data_dir"}  # fmt: skip
    for o in HEADLESS_OPTIONS:
        if o.name not in skip:
            args += [o.flag, SAMPLE[o.name]]
    out = tmp_path / "spec.toml"
    res = CliRunner().invoke(app, ["headless", *args, "--no-center", "--save-config", str(out)])
    assert res.exit_code == 0, res.output
    spec = Spec.load(out)
    assert spec.model.widths == (4, 16) and spec.data.mode == "RGB" and spec.qkv.dk_sweep == (8, 32)
    assert spec.data.center is False and spec.train.optimizer == "gd"


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
