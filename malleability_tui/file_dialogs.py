"""The app's file actions: export the run's CSVs, save a screenshot, load and save the Setup
form's spec. Each asks for a path (``PathDialog``) and says what it did or what failed; the
app's ``action_`` methods call these."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from engine.errors import EngineError
from engine.run.spec import RunSpec
from malleability_tui.dialogs.path_dialog import PathDialog
from malleability_tui.format import error_text
from malleability_tui.widgets.setup_form import SetupForm


class FileHost(Protocol):
    """What these actions need of the app (``MalleabilityApp`` is one; no import of it, so
    the app depends on this module and not the reverse)."""

    state: Any
    settings: Any
    last_export: Any

    @property
    def notify(self) -> Callable[..., Any]: ...
    @property
    def push_screen(self) -> Callable[..., Any]: ...
    @property
    def show_error(self) -> Callable[..., Any]: ...
    @property
    def main_query(self) -> Callable[..., Any]: ...
    @property
    def save_screenshot(self) -> Callable[..., Any]: ...
    @property
    def action_show_tab(self) -> Callable[..., Any]: ...


def export(app: FileHost) -> None:
    """Ask for a folder and copy the current run's CSVs there."""
    run_dir = app.state.run_dir
    if not run_dir or not (Path(run_dir) / "spec.toml").exists():
        app.notify("no run to export: start one or open one in Runs (7)", severity="warning")
        return

    def done(to: str | None) -> None:
        if not to:
            return
        from engine.run.runs import export_run

        try:
            app.last_export = export_run(Path(app.state.run_dir), "csv", Path(to))
        except (EngineError, OSError) as e:
            app.show_error("Export failed", error_text(e))
            return
        app.state.log(f"exported {len(app.last_export)} files to {to}")
        app.notify(f"exported {len(app.last_export)} files to {to}")

    name = Path(run_dir).name
    app.push_screen(
        PathDialog("Export the run's CSVs to folder:", str(app.settings.export_root / name)), done
    )


def screenshot(app: FileHost, filename: str | None = None, to: str | None = None) -> None:
    """Save an SVG screenshot into ``to`` (default: the export folder)."""
    folder = Path(to) if to else app.settings.export_root
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = app.save_screenshot(filename, path=str(folder))
    except OSError as e:
        app.show_error("Screenshot failed", error_text(e))
        return
    app.state.log(f"screenshot saved to {path}")
    app.notify(f"screenshot: {path}")


def load_spec(app: FileHost) -> None:
    """Ask for a spec TOML and put it in the Setup form."""

    def done(path: str | None) -> None:
        if not path:
            return
        try:
            spec = RunSpec.load(path)
        except EngineError as e:
            app.show_error("Could not load the spec", error_text(e))
            return
        app.main_query(SetupForm).spec = spec
        app.action_show_tab("setup")
        app.notify(f"loaded {path}")

    app.push_screen(PathDialog("Load a run spec TOML:", "run.toml"), done)


def save_spec(app: FileHost) -> None:
    """Ask for a path and save the Setup form's spec there as TOML."""

    def done(path: str | None) -> None:
        if not path:
            return
        spec, errors = app.main_query(SetupForm).validate()
        if spec is None:
            app.show_error("The form has errors", "\n".join(f"{k}: {v}" for k, v in errors.items()))
            return
        try:
            spec.save(path)
        except (EngineError, OSError) as e:
            app.show_error("Could not save the spec", error_text(e))
            return
        app.notify(f"saved {path}")

    app.push_screen(PathDialog("Save the run spec as TOML:", "run.toml", _writable_file), done)


def _writable_file(path: str) -> str | None:
    """Why ``path`` cannot take a file (into a run directory, a folder, ...), or None: the
    check the CLI's --save-config and report --to make (``engine.run.paths``)."""
    from engine.run.paths import check_file_target

    try:
        check_file_target(path, "path")
    except EngineError as e:
        return error_text(e)
    return None
