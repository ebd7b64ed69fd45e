"""SetupForm: the run spec as a form, validated inline with the CLI's RunSpec rules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Input, Label, Select, Static

from engine.data.sources import is_source
from engine.data.subset import ClassCounts, subset_problem
from engine.errors import EngineError
from engine.run.spec import RunSpec
from malleability_tui.spec_form import (
    FORM_FIELDS,
    SELECT_FIELDS,
    SELECT_OPTIONS,
    FormField,
    form_to_spec,
    spec_to_form,
)
from malleability_tui.widgets.focus_style import RestyleSelfOnFocus


@dataclass(frozen=True)
class DataChoice:
    """One data set of the picker: whether it is available here, how to get it."""

    name: str
    available: bool
    where: str
    how_to_get: str


def data_choices(root: str | None = None) -> list[DataChoice]:
    """Every registered data set with its status (defensive against the registry's shape)."""
    try:
        from engine.data import DATASETS, dataset_status
    except ImportError:  # pragma: no cover - engine.data not built yet
        return [DataChoice("digits", True, "built in", "")]
    out = []
    for name in DATASETS:
        try:
            st = dataset_status(name, root)
            ok = bool(getattr(st, "found", False)) and not getattr(st, "problem", None)
            where = (
                "built in" if getattr(st, "builtin", False) else str(getattr(st, "path", "") or "")
            )
            out.append(DataChoice(name, ok, where, getattr(st, "how_to_get", "") or ""))
        except Exception as e:  # noqa: BLE001 - one broken entry must not hide the others
            out.append(DataChoice(name, False, "", str(e)))
    return out


SOURCE_HINT = "npz:FILE, folder:DIR or hf:DIR (blank: the data set above)"

CountsFn = Callable[[str, "str | None"], ClassCounts]
"""(data set, data dir) → its images per class and split (``engine.data.subset_counts``)."""


def _subset_counts(name: str, root: str | None) -> ClassCounts:
    from engine.data import subset_counts

    return subset_counts(name, root)


class SetupForm(RestyleSelfOnFocus, VerticalScroll):
    """Fields of the spec. Posts ``SpecChanged`` whenever the form becomes (in)valid.

    "Own data" takes a source (``npz:FILE``, ``folder:DIR``, ``hf:DIR``) in place of the
    picked data set; it is read and checked like one. Besides the spec's own rules, the
    chosen subset is checked against the data set as you type (``engine.data.subset_problem``, the loader's rule): its class counts are
    read once per data set and folder, in a thread, and a problem shows under its field.
    """

    DEFAULT_CSS = """
    SetupForm { padding: 0 1; }
    SetupForm .row { height: auto; }
    SetupForm .row Label.name { width: 14; padding: 0 1 0 0; content-align: left middle; height: 1; }
    SetupForm .row:focus-within Label.name { color: $accent; text-style: bold; }
    SetupForm .row Input, SetupForm .row Select { width: 1fr; }
    SetupForm Input { border: none; height: 1; padding: 0 1; }
    SetupForm Input:focus { background: $accent 30%; }
    SetupForm Select > SelectCurrent { border: none; height: 1; padding: 0 1; }
    SetupForm Select:focus > SelectCurrent { background: $accent 30%; }
    SetupForm .error { color: $error; padding: 0 0 0 14; width: 100%; height: auto; display: none; }
    SetupForm .error.-show { display: block; }
    SetupForm .hint { color: $text-muted; padding: 0 0 0 14; width: 100%; height: auto; }
    SetupForm #buttons { height: auto; margin: 1 0 0 0; }
    SetupForm #buttons Button { margin: 0 1 0 0; min-width: 10; }
    SetupForm #buttons Button:focus { text-style: bold reverse; }
    SetupForm #datasets { color: $text-muted; height: auto; margin: 1 0 0 0; }
    """

    class SpecChanged(Message):
        def __init__(self, spec: RunSpec | None, errors: dict[str, str]) -> None:
            super().__init__()
            self.spec = spec
            self.errors = errors

    spec: reactive[RunSpec] = reactive(RunSpec, always_update=True)
    """The spec shown (set by the app: load, quick preset)."""

    def __init__(
        self,
        spec: RunSpec,
        choices: list[DataChoice],
        experiments: list[str],
        counts: CountsFn | None = None,
        **kw,
    ) -> None:
        super().__init__(**kw)
        self._base = spec
        self.choices = choices
        self.experiments = experiments
        self.errors: dict[str, str] = {}
        self._loading = False
        self._counts_fn = counts or _subset_counts
        self._counts: dict[tuple[str, str | None], ClassCounts | str] = {}
        """(data set, data dir) → its class counts, or why they could not be read."""
        self._reading: set[tuple[str, str | None]] = set()
        self.set_reactive(SetupForm.spec, spec)

    def compose(self) -> ComposeResult:
        vals = spec_to_form(self._base)
        opts = [
            (f"{c.name} {'✓' if c.available else '✗ (not here)'}", c.name) for c in self.choices
        ]
        source = vals["dataset"] if is_source(vals["dataset"]) else ""
        if source:
            vals["dataset"] = self.choices[0].name if self.choices else "digits"
        if vals["dataset"] not in {c.name for c in self.choices}:
            opts.append((vals["dataset"], vals["dataset"]))
        with Horizontal(classes="row"):
            yield Label("Data set", classes="name")
            yield Select(
                opts, value=vals["dataset"], allow_blank=False, id="f-dataset", compact=True
            )
        with Horizontal(classes="row"):
            yield Label("Own data", classes="name")
            yield Input(source, placeholder=SOURCE_HINT, id="f-source", compact=True)
        yield Static("", classes="hint", id="hint-dataset")
        yield Label("", classes="error", id="err-dataset")
        inputs = {f.key: f for f in FORM_FIELDS}
        for f in FORM_FIELDS:
            if f.key != "address":  # below the executor it belongs to
                yield from self._input_row(f, vals)
        for key, label in (("device", "Device"), ("dtype", "Dtype"), ("executor", "Executor")):
            with Horizontal(classes="row"):
                yield Label(label, classes="name")
                opts2 = [(o, o) for o in dict.fromkeys((*SELECT_OPTIONS[key], vals[key]))]
                yield Select(opts2, value=vals[key], allow_blank=False, id=f"f-{key}", compact=True)
            yield Label("", classes="error", id=f"err-{key}")
        yield from self._input_row(inputs["address"], vals)
        with Horizontal(id="buttons"):
            yield Button("Run ^r", variant="primary", id="run", action="app.run_job", compact=True)
            yield Button("Quick F4", id="quick", action="app.quick_preset", compact=True)
            yield Button("Paper F6", id="paper", action="app.paper_preset", compact=True)
            yield Button("Load F2", id="load", action="app.load_spec", compact=True)
            yield Button("Save F3", id="save", action="app.save_spec", compact=True)
        yield Static(self._datasets_text(), id="datasets")

    def _input_row(self, f: FormField, vals: dict[str, str]) -> ComposeResult:
        with Horizontal(classes="row"):
            yield Label(f.label, classes="name")
            yield Input(vals[f.key], placeholder=f.hint, id=f"f-{f.key}", compact=True)
        if f.key == "experiment":
            yield Static("available: " + ", ".join(self.experiments), classes="hint")
        yield Label("", classes="error", id=f"err-{f.key}")

    def _datasets_text(self) -> str:
        lines = ["Data sets here:"]
        for c in self.choices:
            if c.available:
                lines.append(f"  ✓ {c.name} ({c.where})")
            else:
                lines.append(f"  ✗ {c.name}: {c.how_to_get}")
        return "\n".join(lines)

    def on_mount(self) -> None:
        self._update_hint()
        self.validate()

    # -- values ------------------------------------------------------------------------

    def values(self) -> dict[str, str]:
        vals = {f.key: self.query_one(f"#f-{f.key}", Input).value for f in FORM_FIELDS}
        for key in SELECT_FIELDS:
            v = self.query_one(f"#f-{key}", Select).value
            vals[key] = str(v) if v is not Select.NULL else ""
        source = self.query_one("#f-source", Input).value.strip()
        if source:  # your own data replaces the data set picked above
            vals["dataset"] = source
        return vals

    def apply_preset(self, preset: Callable[[RunSpec], RunSpec]) -> RunSpec:
        """Put ``preset`` of the form's spec in the form (of the spec the form started from
        while a field is invalid) and return it."""
        spec, _ = self.validate()
        self.spec = preset(spec or self._base)
        return self.spec

    def validate(self) -> tuple[RunSpec | None, dict[str, str]]:
        """Check every field; show errors next to the fields; post ``SpecChanged``."""
        spec, errors = form_to_spec(self._base, self.values())
        if spec is not None:
            errors = self._data_errors(spec)
            if errors:
                spec = None
        self.errors = errors
        for key in [f.key for f in FORM_FIELDS] + list(SELECT_FIELDS):
            lab = self.query_one(f"#err-{key}", Label)
            msg = errors.get(key)
            lab.update(f"⚠ {msg}" if msg else "")
            lab.set_class(bool(msg), "-show")
        self.post_message(self.SpecChanged(spec, errors))
        return spec, errors

    # -- the subset against the data set ----------------------------------------------

    def _data_errors(self, spec: RunSpec) -> dict[str, str]:
        """{field: message} when the data set cannot give this subset (nothing while its
        counts are being read: the loader still checks when the run starts)."""
        d = spec.data
        key = (d.name, d.data_dir)
        got = self._counts.get(key)
        if got is None:
            self._read_counts(key)
            return {}
        if isinstance(got, str):
            missing_dir = d.data_dir is not None and not Path(d.data_dir).expanduser().is_dir()
            return {"data_dir" if missing_dir else "dataset": got}
        problem = subset_problem(got, d.classes, d.n_train, d.n_test)
        return {problem[0]: problem[1]} if problem else {}

    def _read_counts(self, key: tuple[str, str | None]) -> None:
        if key in self._reading:
            return
        self._reading.add(key)
        self.run_worker(
            partial(self._count_in_thread, key), thread=True, group="counts", exit_on_error=False
        )

    def _count_in_thread(self, key: tuple[str, str | None]) -> None:
        try:
            got: ClassCounts | str = self._counts_fn(*key)
        except EngineError as e:
            got = str(e)
        except Exception as e:  # noqa: BLE001 - a broken loader must not break the form
            got = f"{type(e).__name__}: {e}"
        try:
            self.app.call_from_thread(self._got_counts, key, got)
        except RuntimeError:  # the app is closing
            pass

    def _got_counts(self, key: tuple[str, str | None], got: ClassCounts | str) -> None:
        self._reading.discard(key)
        self._counts[key] = got
        if self.is_mounted:
            self.validate()

    def _update_hint(self) -> None:
        v = self.query_one("#f-dataset", Select).value
        c = next((c for c in self.choices if c.name == v), None)
        hint = self.query_one("#hint-dataset", Static)
        if self.query_one("#f-source", Input).value.strip():
            hint.update("own data: read and checked as you type (replaces the data set above)")
        elif c is None or c.available:
            hint.update(f"found: {c.where}" if c else "")
        else:
            hint.update(f"not available here: {c.how_to_get}")

    def watch_spec(self, spec: RunSpec) -> None:
        """Show a new spec (loaded from TOML, quick preset) in every field."""
        if not self.is_mounted:
            return
        self._base = spec
        vals = spec_to_form(spec)
        self._loading = True
        for f in FORM_FIELDS:
            self.query_one(f"#f-{f.key}", Input).value = vals[f.key]
        source = vals["dataset"] if is_source(vals["dataset"]) else ""
        self.query_one("#f-source", Input).value = source
        for key in SELECT_FIELDS:
            if key == "dataset" and source:
                continue  # the picker keeps its built-in choice; the source is typed
            sel = self.query_one(f"#f-{key}", Select)
            sel.value = vals[key]
        self._loading = False
        self._update_hint()
        self.validate()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.input.id == "f-source":
            self._update_hint()
        if not self._loading:
            self.validate()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.select.id == "f-dataset":
            self._update_hint()
        if not self._loading:
            self.validate()
