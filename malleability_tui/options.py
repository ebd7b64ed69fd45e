"""Run options once: the table the commands and the TUI setup form are made from.

Each ``RunOption`` names an option (the Python parameter and the form key), its CLI flag,
the ``RunSpec.replace`` key it sets, the ``ConfigError.field`` the spec reports for it,
its kind (which fixes the parser), its help text and, for options the setup form shows,
the form's label and hint. The typer parameters of ``headless``, ``reproduce`` and
``data show`` are generated from it (``malleability_tui.cli.declared``): adding an option
is one entry. ``parse_value`` is the one parser of option text (lists
included) for both front ends; the values then go through the same ``RunSpec``
validation. Neither textual nor typer is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

KINDS = (
    "ints",
    "floats",
    "names",
    "int",
    "float",
    "float_or_unset",
    "str",
    "path",
    "classes",
    "bool",
    "lower",
    "upper",
    "ints_or_empty",
)
"""ints / floats / names: comma-separated lists (each value once); classes: ``all`` or
ints; ints_or_empty: ints, blank is the empty list; path: blank is None; lower / upper: a
name, lower- / upper-cased; float_or_unset: a number, blank is None (unset); int, float,
str, bool: one value."""

_WHAT = {
    "ints": "comma-separated integers, e.g. 16,1024",
    "floats": "comma-separated numbers, e.g. 0.1,0.3",
    "names": "comma-separated names",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
}


class OptionError(ValueError):
    """Option text that does not parse: ``str(e)`` says what is allowed."""


@dataclass(frozen=True)
class RunOption:
    """One run option, declared once: the commands' typer parameters
    (``malleability_tui.cli.declared``), the setup form's field, the spec change it makes
    and its flag in error messages all come from here."""

    name: str
    """Parameter name of the commands and key of the setup form."""
    flag: str
    spec_key: str
    """``RunSpec.replace`` key."""
    error_field: str
    """The ``ConfigError.field`` of this option."""
    kind: str
    help: str
    label: str = ""
    """Setup-form label ('' : not in the form)."""
    hint: str = ""
    """Setup-form hint under the field."""
    short: str = ""
    """The one-letter flag beside ``flag`` ('': none)."""
    cli_type: type | None = None
    """The value's type on the command line (None: the kind's, ``CLI_TYPES``)."""
    default: Any = None
    """The command's default (None: not given, the spec's own applies)."""
    headless: bool = True
    """A flag of ``malleability headless`` (False: only where a command names it)."""

    @property
    def key(self) -> str:
        """The setup form's key (widget id suffix): the option's name."""
        return self.name

    @property
    def section(self) -> str:
        """The spec section it sets (``executor``, ``data``, …; a top-level key: itself)."""
        return self.spec_key.partition("__")[0]

    def told(self, **changes: Any) -> RunOption:
        """This option as another command presents it (its own help or default): the
        flag, the spec key and the parser stay the declaration's."""
        return replace(self, **changes)


CLI_TYPES: dict[str, type] = {"int": int, "float": float, "float_or_unset": float, "bool": bool}
"""A kind's type on the command line (the others: text, parsed by ``parse_value``)."""


def _name(t: str) -> str:
    """A name lower-cased; a data source ``npz:PATH`` keeps its path as typed."""
    kind, sep, rest = t.partition(":")
    return f"{kind.lower()}:{rest}" if sep else t.lower()


def parse_value(kind: str, text: Any) -> Any:
    """Option text → its value for ``RunSpec.replace``; ``OptionError`` (what is allowed)
    when it does not parse. Non-text values (a typer int, a bool) pass through."""
    if kind not in KINDS:
        raise ValueError(f"unknown option kind {kind!r}")
    if not isinstance(text, str):
        return text
    t = text.strip()
    if kind == "classes":
        if t.lower() in ("", "all"):
            return None
        kind = "ints"
    if kind == "path":
        return t or None
    if kind == "float_or_unset":
        if not t:
            return None
        kind = "float"
    if kind == "lower":
        return _name(t)
    if kind == "upper":
        return t.upper()
    if kind == "ints_or_empty":
        if not t:
            return ()
        kind = "ints"
    if kind == "str":
        return t
    try:
        if kind == "bool":
            if t.lower() not in ("true", "false"):
                raise ValueError
            return t.lower() == "true"
        if kind == "int":
            return int(t)
        if kind == "float":
            return float(t)
        if kind == "names":
            vals: tuple[Any, ...] = tuple(_name(p.strip()) for p in t.split(",") if p.strip())
        else:
            conv = int if kind == "ints" else float
            vals = tuple(conv(p) for p in t.replace(" ", "").split(",") if p)
    except ValueError:
        raise OptionError(_WHAT[kind]) from None
    if not vals:
        raise OptionError(f"at least one value ({_WHAT[kind]})")
    seen: set[Any] = set()
    for v in vals:
        if v in seen:
            raise OptionError(f"each value once ({v} is repeated)")
        seen.add(v)
    return vals


QUICK_PRESET = (
    "Small preset: n_train 300 (capped to what the data set has), widths 16,32,64,256,1024, "
    "batch 32, 200 epochs then until converged (cap 900), centred inputs (not the paper's: "
    "it says so)"
)
"""What ``--quick`` sets (``engine.reproduce.presets.QUICK``; a test holds the two equal),
written once for every command's help."""
QUICK_MAX_EPOCHS = 900
"""The quick preset's cap on epochs of training until converged."""


RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption(
        "dataset",
        "--dataset",
        "data__name",
        "data.name",
        "lower",
        "Data set: digits (embedded), mnist, fashion-mnist, cifar10, synthetic; or your own: npz:FILE, folder:DIR, hf:DIR (docs/guide.md#own-data).",
        short="-d",
    ),
    RunOption(
        "data_dir",
        "--data-dir",
        "data__data_dir",
        "data.data_dir",
        "path",
        "Folder holding the data set's files.",
        "Data dir",
        "blank: search the usual places",
        cli_type=Path,
    ),
    RunOption(
        "image_size",
        "--image-size",
        "data__image_size",
        "data.image_size",
        "int",
        "folder:/hf: sources: resize images to N×N pixels (default: as found, all alike).",
    ),
    RunOption(
        "mode",
        "--mode",
        "data__mode",
        "data.mode",
        "upper",
        "folder:/hf: sources: convert images to L (grey) or RGB (default: as found, all alike).",
    ),
    RunOption(
        "image_column",
        "--image-column",
        "data__image_column",
        "data.image_column",
        "str",
        "hf: sources: the image column (default image, else img).",
    ),
    RunOption(
        "label_column",
        "--label-column",
        "data__label_column",
        "data.label_column",
        "str",
        "hf: sources: the label column (default label).",
    ),
    RunOption(
        "experiment",
        "--experiment",
        "experiment",
        "experiment",
        "str",
        "Experiment(s), comma-separated, or all (default). See `malleability experiments`.",
        "Experiments",
        "all or e.g. train,ntk",
        short="-e",
    ),
    RunOption(
        "classes",
        "--classes",
        "data__classes",
        "data.classes",
        "classes",
        "Class labels to keep, e.g. 3,8 (binary, ±1 targets) or all.",
        "Classes",
        "all or e.g. 3,8 (binary)",
    ),
    RunOption(
        "n_train",
        "--n-train",
        "data__n_train",
        "data.n_train",
        "int",
        "Training examples, class-balanced (default 1000).",
        "n train",
        "class-balanced",
    ),
    RunOption(
        "n_test",
        "--n-test",
        "data__n_test",
        "data.n_test",
        "int",
        "Test examples, class-balanced (default 200).",
        "n test",
    ),
    RunOption(
        "widths",
        "--widths",
        "model__widths",
        "model.widths",
        "ints",
        "Hidden widths, e.g. 16,1024,4096 (default 4…4096).",
        "Widths",
        "e.g. 16,1024,4096",
    ),
    RunOption(
        "models",
        "--models",
        "model__kinds",
        "model.kinds",
        "names",
        "Models: relu,attn (default both), qkv (QKV-Attn, v2).",
        "Models",
        "relu,attn",
    ),
    RunOption(
        "qkv_dk",
        "--qkv-dk",
        "qkv__d_k",
        "qkv.d_k",
        "int",
        "QKV-Attn projection width d_k (0: d_k = d, default).",
    ),
    RunOption(
        "qkv_dk_sweep",
        "--qkv-dk-sweep",
        "qkv__dk_sweep",
        "qkv.dk_sweep",
        "ints_or_empty",
        "ntk: extra QKV-Attn d_k values at the largest width, e.g. 8,32.",
    ),
    RunOption(
        "seeds",
        "--seeds",
        "seeds",
        "seeds",
        "ints",
        "Seeds, e.g. 0,1,2 (default).",
        "Seeds",
        "e.g. 0,1,2",
    ),
    RunOption(
        "epochs",
        "--epochs",
        "train__epochs",
        "train.epochs",
        "int",
        "Training epochs (paper: 500).",
        "Epochs",
        "paper: 500",
    ),
    RunOption(
        "lr",
        "--lr",
        "train__lr",
        "train.lr",
        "float",
        "Learning rate (paper: 1e-3).",
        "Learning rate",
        "paper: 1e-3",
    ),
    RunOption(
        "optimizer",
        "--optimizer",
        "train__optimizer",
        "train.optimizer",
        "lower",
        "adam (paper), sgd or gd (full batch).",
    ),
    RunOption(
        "attacks",
        "--attacks",
        "flip__attacks",
        "flip.attacks",
        "names",
        "Attacks for flip: fgsm,pgd,mim.",
        "Attacks",
        "fgsm,pgd,mim",
    ),
    RunOption(
        "eps",
        "--eps",
        "flip__eps",
        "flip.eps",
        "floats",
        "ε values in pixel space, e.g. 0.1,0.3 (default 0.3).",
        "ε (pixels)",
        "e.g. 0.1,0.3",
    ),
    RunOption(
        "rtol",
        "--rtol",
        "spectrum__rtol",
        "spectrum.rtol",
        "float",
        "Relative eigenvalue tolerance of the numerical rank (spectrum).",
    ),
    RunOption(
        "datasets",
        "--datasets",
        "spectrum__datasets",
        "spectrum.datasets",
        "names",
        "Extra data sets for spectrum, e.g. mnist,cifar10 (sources npz:FILE etc. too).",
    ),
    RunOption(
        "device", "--device", "device", "device", "str", "auto (CUDA when present), cpu or cuda."
    ),
    RunOption("dtype", "--dtype", "dtype", "dtype", "str", "float32 (default) or float64."),
    RunOption(
        "executor",
        "--executor",
        "executor__kind",
        "executor.kind",
        "lower",
        "Where sweep cells run: local (default, in this process) or ray (parallel; docs/guide.md#ray).",
    ),
    RunOption(
        "address",
        "--address",
        "executor__address",
        "executor.address",
        "path",
        "Ray cluster to join (host:port of `ray start --head`); default: a local Ray on this machine.",
        "Ray address",
        "executor ray: host:6379 of a cluster; blank: a local Ray",
    ),
    RunOption(
        "max_parallel",
        "--max-parallel",
        "executor__max_parallel",
        "executor.max_parallel",
        "int",
        "Cells in flight at once with --executor ray (default: as many as the CPUs allow).",
    ),
    RunOption(
        "cpus_per_cell",
        "--cpus-per-cell",
        "executor__cpus_per_cell",
        "executor.cpus_per_cell",
        "int",
        "CPUs and torch threads per Ray cell (default 1).",
    ),
    RunOption(
        "gpus_per_cell",
        "--gpus-per-cell",
        "executor__gpus_per_cell",
        "executor.gpus_per_cell",
        "float",
        "GPUs per Ray cell, fractions share one (default 0).",
    ),
    RunOption(
        "center",
        "--center",
        "data__center",
        "data.center",
        "bool",
        "Subtract the training set's per-pixel mean before the unit-norm scaling (default: no, as the paper).",
    ),
    RunOption(
        "center_fraction",
        "--center-fraction",
        "data__center_fraction",
        "data.center_fraction",
        "float_or_unset",
        "Centring as a knob: subtract this fraction (0 to 1) of the per-pixel mean (0: the paper's, 1: --center).",
        "Centring",
        "0..1, blank: unset",
    ),
    RunOption(
        "max_epochs",
        "--max-epochs",
        "train__max_epochs",
        "train.max_epochs",
        "int",
        f"Override the cap on epochs of training until converged (default 2000; --quick: {QUICK_MAX_EPOCHS}).",
        headless=False,
    ),
    RunOption(
        "adv_recipe",
        "--adv-recipe",
        "flip__adv_recipe",
        "flip.adv_recipe",
        "str",
        "Table 4's adversarial training: pgd (default; the paper's same attack) or fgsm_rs (Wong et al. 2020, about 1/3 of the MNIST preset's FLOPs).",
        headless=False,
    ),
    RunOption(
        "engine",
        "--engine",
        "train__engine",
        "train.engine",
        "str",
        "Training step and attack gradient: fused (default: closed form for 2L-ReLU, MLP-Attn and their twins, several networks stacked in one step) or autograd (every model, the reference).",
        headless=False,
    ),
)
"""Every run option, in the order the commands' help lists them (the setup form keeps
the labelled ones in this order too)."""

BY_NAME: dict[str, RunOption] = {o.name: o for o in RUN_OPTIONS}
BY_SPEC_KEY: dict[str, RunOption] = {o.spec_key: o for o in RUN_OPTIONS}
FORM_OPTIONS: tuple[RunOption, ...] = tuple(o for o in RUN_OPTIONS if o.label)
"""The setup form's text fields, in form order."""
HEADLESS_OPTIONS: tuple[RunOption, ...] = tuple(o for o in RUN_OPTIONS if o.headless)
"""The run options of ``malleability headless``, in its help's order."""
SOURCE_OPTIONS: tuple[RunOption, ...] = tuple(
    BY_NAME[n] for n in ("image_size", "mode", "image_column", "label_column")
)
"""The options of an own data source (``folder:``/``hf:``), also ``data show``'s."""


def quick_help(seeds: str) -> str:
    """``--quick``'s help: the preset, then the seeds the command trains with it."""
    return f"{QUICK_PRESET}; seeds {seeds}."


def flag_error(e: Exception, flags: Mapping[str, tuple[str, Any]]) -> str | None:
    """A spec's ``ConfigError`` in the user's own words: ``invalid --widths '0': what is
    allowed``, when ``e.field`` is one of ``flags`` (spec field → (flag, the text given));
    None otherwise (the error names a field no flag set, e.g. from a config file)."""
    field = getattr(e, "field", None)
    if not isinstance(field, str) or field not in flags:
        return None
    from engine.errors import shown

    flag, raw = flags[field]
    return f"invalid {flag} {shown(raw)}: {getattr(e, 'allowed', e)}"


def given_flags(values: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """spec field → (flag, text) of the run options given (None: not given)."""
    return {
        BY_NAME[n].error_field: (BY_NAME[n].flag, raw)
        for n, raw in values.items()
        if raw is not None and n in BY_NAME
    }


def spec_changes(values: Mapping[str, Any]) -> dict[str, Any]:
    """``RunSpec.replace`` changes of the options given (None: not given), parsed; an
    ``OptionError`` names the flag and the text: ``invalid --widths '4,x': …``."""
    out: dict[str, Any] = {}
    for name, raw in values.items():
        if raw is None:
            continue
        o = BY_NAME[name]
        try:
            out[o.spec_key] = parse_value(o.kind, str(raw) if o.kind == "path" else raw)
        except OptionError as e:
            from engine.errors import shown

            raise OptionError(f"invalid {o.flag} {shown(raw)}: {e}") from None
    return out
