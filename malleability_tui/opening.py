"""Opening runs from disk: a run directory, a reproduction folder (its claims checklist),
the sub-run behind a claim, a run to resume, two runs to compare; and the runs browser's
list. Each replaces the app's state and hands it to the panels (main_screen.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import EngineError
from malleability_tui.format import error_text
from malleability_tui.state import RunState, load_run_state
from malleability_tui.widgets.runs_browser import RunsBrowser

if TYPE_CHECKING:
    from malleability_tui.host import AppHost

FIRST_TAB = (
    ("ntk_distance", "sweep"),
    ("train", "training"),
    ("spectrum", "spectra"),
    ("flip_rates", "flips"),
    ("influence_check", "flips"),
    ("landscape", "landscape"),
    ("kappa_sweep", "spectra"),
)
"""The tab an opened run shows: that of its first table (in this order) with rows."""

BUSY = "a job is running: cancel it before opening another run"


class RunOpener:
    """Opens what the runs browser, the command line and the claims checklist name."""

    def __init__(self, app: AppHost) -> None:
        self.app = app

    def refresh(self) -> None:
        """Re-read the runs root into the runs browser (the live run marked)."""
        from engine.run.runs import list_runs

        app = self.app
        browser = app.main_query(RunsBrowser)
        browser.live = app.state.run_dir if app.runner.running else None
        browser.runs = list_runs(app.settings.runs_root)

    def compare(self, a: str, b: str) -> None:
        """Open the compare screen on two runs (side by side, differences highlighted)."""
        from malleability_tui.screens.compare import CompareScreen

        try:
            states = load_run_state(a), load_run_state(b)
        except (EngineError, OSError) as e:
            self.app.show_error("Could not open the runs", error_text(e))
            return
        self.app.push_screen(CompareScreen(*states))

    def resume(self, path: str) -> None:
        """Continue a run that did not finish, with its saved spec (``--resume``)."""
        from engine.run.validate import read_spec

        if self.app.busy:
            self.app.notify(
                "a job is running: cancel it (c) before resuming another run", severity="warning"
            )
            return
        try:
            spec = read_spec(Path(path) / "spec.toml")
        except (EngineError, OSError) as e:
            self.app.show_error("Could not resume the run", error_text(e))
            return
        self.app.jobs.start_job(spec, Path(path), resume=True)

    def open(self, path: str) -> None:
        """Fill every panel from a run directory on disk (a reproduction: the Claims panel)."""
        app = self.app
        if app.busy:
            app.notify(BUSY, severity="warning")
            return
        if (Path(path) / "reproduce.json").is_file() and not (Path(path) / "spec.toml").exists():
            self.open_reproduction(path)
            return
        try:
            app.state = load_run_state(path)
        except (EngineError, OSError) as e:
            app.show_error("Could not open the run", error_text(e))
            return
        app.main.push_state(force=True)
        if app.state.damage:  # opened what could be read; say what could not
            app.show_error("Damaged run (opened the rest)", "\n".join(app.state.damage))
        else:
            app.notify(f"opened {Path(path).name}")
        tab = next((tab for t, tab in FIRST_TAB if app.state.tables.get(t)), "sweep")
        app.action_show_tab(tab)

    def open_reproduction(self, path: str) -> None:
        """Show a reproduction folder's claims checklist (its summary.json) on the Claims
        panel; ``enter`` on a claim opens the sub-run behind it (``show_claim``)."""
        from engine.run.runs import collect
        from engine.run.validate import read_json_object

        app = self.app
        try:
            summary, _runs = collect(Path(path))
            parts = read_json_object(Path(path) / "reproduce.json").get("parts") or []
        except (EngineError, OSError) as e:
            app.show_error("Could not open the reproduction", error_text(e))
            return
        part_list = [p for p in parts if isinstance(p, dict)]
        rep = {"path": str(path), "summary": dict(summary or {}), "parts": part_list}
        # The other panels show the first part that ran (enter on a claim: its own part).
        key, state = first_part(Path(path), part_list)
        if state is None:
            state = RunState(run_dir=str(path), summary=dict(summary or {}))
            state.status = str((summary or {}).get("status") or "finished")
        state.reproduction = rep
        app.state = state
        app.main.push_state(force=True)
        shown = (
            f"; the panels show its part {key} (enter on a claim: the part behind it)"
            if key
            else "; no part has run yet: the panels fill as parts finish"
        )
        app.notify(f"opened reproduction {Path(path).name}{shown}")
        app.action_show_tab("claims")

    def show_claim(self, item: dict[str, Any]) -> None:
        """Show the panel behind a checklist item, with the reproduction's sub-run that
        holds its cells loaded (the checklist stays on the Claims panel)."""
        from malleability_tui.views.claims import claim_target

        app = self.app
        rep = app.state.reproduction
        tab, key = claim_target(item, list(rep.get("parts") or []))
        what = f"claim {item.get('claim')} ({item.get('dataset', '')})"
        sub = Path(str(rep.get("path", ""))) / key if key else None
        if sub is None or not (sub / "spec.toml").is_file():
            app.notify(
                f"{what}: no sub-run of this reproduction holds its cells", severity="warning"
            )
            return
        if app.busy:
            app.notify(BUSY, severity="warning")
            return
        if Path(app.state.run_dir) != sub:
            try:
                state = load_run_state(sub)
            except (EngineError, OSError) as e:
                app.show_error("Could not open the sub-run", error_text(e))
                return
            state.reproduction = rep
            app.state = state
            app.main.push_state(force=True)
        app.notify(f"{what}: {key}")
        app.action_show_tab(tab)


def first_part(path: Path, parts: list[dict[str, Any]]) -> tuple[str, RunState | None]:
    """The first of a reproduction's ``parts`` (reproduce.json order) whose sub-run under
    ``path`` can be read, with its state; ("", None) when none can."""
    for part in parts:
        key = str(part.get("key", ""))
        sub = path / key
        if key and (sub / "spec.toml").is_file():
            try:
                return key, load_run_state(sub)
            except (EngineError, OSError):
                continue  # a damaged part: the next one
    return "", None
