"""The setup form ⇄ RunSpec adapter: the form's fields (from ``options.py``) as text, and
the text validated back into a spec with one message per wrong field (pure, no Textual)."""

from __future__ import annotations

from typing import Any

from engine.errors import ConfigError
from engine.run.spec import RunSpec
from malleability_tui.options import FORM_OPTIONS, OptionError, RunOption, parse_value

FormField = RunOption
"""A text field of the setup form: a run option with a label (``malleability_tui.options``)."""
FORM_FIELDS = FORM_OPTIONS
"""The setup form's text fields, in order: the shared options table's labelled options."""
SELECT_FIELDS = {
    "dataset": ("data__name", "data.name"),
    "device": ("device", "device"),
    "dtype": ("dtype", "dtype"),
    "executor": ("executor__kind", "executor.kind"),
}
SELECT_OPTIONS = {
    "device": ("auto", "cpu", "cuda"),
    "dtype": ("float32", "float64"),
    "executor": ("local", "ray"),
}
"""The fixed choices of the selects other than the data set."""


def join_values(v: Any) -> str:
    """A spec value as form text: a list comma-joined, None as ``all``."""
    if v is None:
        return "all"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def spec_to_form(spec: RunSpec) -> dict[str, str]:
    """The text of every form field for ``spec``."""
    d = spec.to_dict()
    vals: dict[str, str] = {}
    for f in FORM_FIELDS:
        sec, _, name = f.spec_key.partition("__")
        v = d.get(sec, {}).get(name) if name else d.get(sec)
        if f.kind == "classes" and v is None:
            vals[f.key] = "all"
        else:
            vals[f.key] = join_values(v) if v is not None or f.kind == "classes" else ""
    vals["dataset"] = spec.data.name
    vals["device"] = spec.device
    vals["dtype"] = spec.dtype
    vals["executor"] = spec.executor.kind
    return vals


def _experiment_error(name: str) -> str | None:
    try:
        from engine.experiments.registry import check_names

        check_names(name)  # imports no experiment (nor torch): the form is checked at start
    except ConfigError as e:
        return f"{e.allowed}"
    return None


def _executor_errors(changes: dict[str, Any], errors: dict[str, str]) -> dict[str, str]:
    """An address without executor ray, or ray where it is not installed (the CLI's rule
    and its one-line install hint, ``executors.check_executor``)."""
    kind = changes.get("executor__kind")
    if kind is None or "executor" in errors:
        return {}
    if kind == "local" and changes.get("executor__address") and "address" not in errors:
        return {"address": "only used with executor ray (set Executor to ray, or clear it)"}
    if kind == "ray":
        from engine.run.executors import check_executor
        from engine.run.spec import ExecutorSpec

        try:
            check_executor(ExecutorSpec(kind="ray"))
        except ConfigError as e:
            return {"executor": e.allowed}
    return {}


def form_to_spec(base: RunSpec, values: dict[str, str]) -> tuple[RunSpec | None, dict[str, str]]:
    """Validate the form: (spec, {}) or (None, {form key: message}).

    Each field is checked on its own against ``base`` (the same ``RunSpec``
    validation as the CLI), so every wrong field gets its own message at once.
    """
    errors: dict[str, str] = {}
    changes: dict[str, Any] = {}
    by_error_field: dict[str, str] = {}
    items: list[tuple[str, str, str, Any]] = []
    for f in FORM_FIELDS:
        if f.key not in values:
            continue
        by_error_field[f.error_field] = f.key
        try:
            items.append((f.key, f.spec_key, f.error_field, parse_value(f.kind, values[f.key])))
        except OptionError as e:
            errors[f.key] = f"{f.label}: {e}"
    for key, (spec_key, err_field) in SELECT_FIELDS.items():
        if key in values:
            by_error_field[err_field] = key
            items.append((key, spec_key, err_field, values[key]))
    for key, spec_key, _err_field, val in items:
        try:
            base.replace(**{spec_key: val})
        except ConfigError as e:
            errors[by_error_field.get(e.field, key)] = f"{e.allowed} (got {e.value!r})"
            continue
        except (TypeError, ValueError) as e:
            errors[key] = str(e)
            continue
        changes[spec_key] = val
    if "experiment" in values and "experiment" not in errors:
        msg = _experiment_error(values["experiment"].strip())
        if msg:
            errors["experiment"] = msg
    errors.update(_executor_errors(changes, errors))
    if errors:
        return None, errors
    try:
        return base.replace(**changes), {}
    except ConfigError as e:  # a combination no single field shows
        return None, {by_error_field.get(e.field, "experiment"): f"{e.allowed} (got {e.value!r})"}


def error_line(key: str, message: str) -> str:
    """One wrong field as one line, its label once: ``Widths: comma-separated integers``
    (a parse error already starts with the label; a spec check's does not)."""
    label = next((f.label for f in FORM_FIELDS if f.key == key), key)
    return message if message.startswith(f"{label}: ") else f"{label}: {message}"
