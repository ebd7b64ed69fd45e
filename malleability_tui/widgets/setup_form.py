"""SetupForm: the run spec as a form, validated inline with the CLI's RunSpec rules."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Input, Label, Select, Static

from engine.experiments.spec import RunSpec
from malleability_tui.format import FORM_FIELDS, form_to_spec, spec_to_form


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


class SetupForm(VerticalScroll):
    """Fields of the spec. Posts ``SpecChanged`` whenever the form becomes (in)valid."""

    DEFAULT_CSS = """
    SetupForm { padding: 0 1; }
    SetupForm .row { height: auto; }
    SetupForm .row Label.name { width: 14; padding: 0 1 0 0; content-align: left middle; height: 1; }
    SetupForm .row Input, SetupForm .row Select { width: 1fr; }
    SetupForm Input { border: none; height: 1; padding: 0 1; }
    SetupForm Select > SelectCurrent { border: none; height: 1; padding: 0 1; }
    SetupForm .error { color: $error; padding: 0 0 0 14; height: auto; display: none; }
    SetupForm .error.-show { display: block; }
    SetupForm .hint { color: $text-muted; padding: 0 0 0 14; height: auto; }
    SetupForm #buttons { height: auto; margin: 1 0 0 0; }
    SetupForm #buttons Button { margin: 0 1 0 0; min-width: 10; }
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
        self, spec: RunSpec, choices: list[DataChoice], experiments: list[str], **kw
    ) -> None:
        super().__init__(**kw)
        self._base = spec
        self.choices = choices
        self.experiments = experiments
        self.errors: dict[str, str] = {}
        self._loading = False
        self.set_reactive(SetupForm.spec, spec)

    def compose(self) -> ComposeResult:
        vals = spec_to_form(self._base)
        opts = [
            (f"{c.name} {'✓' if c.available else '✗ (not here)'}", c.name) for c in self.choices
        ]
        if vals["dataset"] not in {c.name for c in self.choices}:
            opts.append((vals["dataset"], vals["dataset"]))
        with Horizontal(classes="row"):
            yield Label("Data set", classes="name")
            yield Select(
                opts, value=vals["dataset"], allow_blank=False, id="f-dataset", compact=True
            )
        yield Static("", classes="hint", id="hint-dataset")
        yield Label("", classes="error", id="err-dataset")
        for f in FORM_FIELDS:
            with Horizontal(classes="row"):
                yield Label(f.label, classes="name")
                yield Input(vals[f.key], placeholder=f.hint, id=f"f-{f.key}", compact=True)
            if f.key == "experiment":
                yield Static("available: " + ", ".join(self.experiments), classes="hint")
            yield Label("", classes="error", id=f"err-{f.key}")
        for key, label, options in (
            ("device", "Device", ("auto", "cpu", "cuda")),
            ("dtype", "Dtype", ("float32", "float64")),
        ):
            with Horizontal(classes="row"):
                yield Label(label, classes="name")
                opts2 = [(o, o) for o in dict.fromkeys((*options, vals[key]))]
                yield Select(opts2, value=vals[key], allow_blank=False, id=f"f-{key}", compact=True)
            yield Label("", classes="error", id=f"err-{key}")
        with Horizontal(id="buttons"):
            yield Button("Run ^r", variant="primary", id="run", action="app.run_job", compact=True)
            yield Button("Quick preset", id="quick", action="app.quick_preset", compact=True)
            yield Button("Load spec F2", id="load", action="app.load_spec", compact=True)
            yield Button("Save spec F3", id="save", action="app.save_spec", compact=True)
        yield Static(self._datasets_text(), id="datasets")

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
        for key in ("dataset", "device", "dtype"):
            v = self.query_one(f"#f-{key}", Select).value
            vals[key] = str(v) if v is not Select.NULL else ""
        return vals

    def validate(self) -> tuple[RunSpec | None, dict[str, str]]:
        """Check every field; show errors next to the fields; post ``SpecChanged``."""
        spec, errors = form_to_spec(self._base, self.values())
        self.errors = errors
        for key in [f.key for f in FORM_FIELDS] + ["dataset", "device", "dtype"]:
            lab = self.query_one(f"#err-{key}", Label)
            msg = errors.get(key)
            lab.update(f"⚠ {msg}" if msg else "")
            lab.set_class(bool(msg), "-show")
        self.post_message(self.SpecChanged(spec, errors))
        return spec, errors

    def _update_hint(self) -> None:
        v = self.query_one("#f-dataset", Select).value
        c = next((c for c in self.choices if c.name == v), None)
        hint = self.query_one("#hint-dataset", Static)
        if c is None or c.available:
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
        for key in ("dataset", "device", "dtype"):
            sel = self.query_one(f"#f-{key}", Select)
            sel.value = vals[key]
        self._loading = False
        self._update_hint()
        self.validate()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if not self._loading:
            self.validate()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.select.id == "f-dataset":
            self._update_hint()
        if not self._loading:
            self.validate()
