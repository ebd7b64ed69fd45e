"""The job controller: starting, watching and stopping the app's jobs (a run or the
paper's reproduction), off the UI thread through ``runner.py``.

It checks the form, asks before a long job (its estimate, engine/experiments/estimate.py),
builds the run's state as the job opens its directory, folds the runner's messages into
the state and tells the user how each job ended. The app routes the runner's messages
and the job keys here (app.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import EngineError
from engine.experiments.estimate import CONFIRM_SECONDS
from engine.run.spec import RunSpec
from engine.run.store import RunStore
from malleability_tui.dialogs.confirm_dialog import ConfirmDialog
from malleability_tui.format import error_text
from malleability_tui.runner import JobEnded, PartDone, PartStarted, ReproductionEnded
from malleability_tui.spec_form import error_line
from malleability_tui.state import RunState, load_run_state
from malleability_tui.text import duration
from malleability_tui.widgets.setup_form import SetupForm

if TYPE_CHECKING:
    from malleability_tui.host import AppHost

BUSY = "a job is already running (c cancels it)"


def reproduction_plan(spec: RunSpec) -> list[Any]:
    """The parts of the paper's reproduction (all four tables) for ``spec``'s data set, as
    ``malleability reproduce --dataset NAME [--quick]`` plans them: --quick when ``spec``
    holds the quick preset, and the form's data folder, device and seeds."""
    from engine.reproduce.plan import plan

    return plan(
        (spec.data.name,),
        quick=spec.quick,
        seeds=spec.seeds,
        data_dir=spec.data.data_dir,
        device=spec.device,
    )


def _read_env(run_dir: str) -> dict[str, Any]:
    import json

    try:
        return json.loads((Path(run_dir) / "env.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class JobController:
    """Runs and reproductions of one app (``app.runner``, ``app.reproduction``)."""

    def __init__(self, app: AppHost) -> None:
        self.app = app
        self.t0: float | None = None
        """When the running job (or reproduction) started (``time.monotonic``)."""
        self._flops: float | None = None
        self._frozen_after_job = False

    def elapsed(self) -> float | None:
        """Seconds of the running job, else of the shown run (None: unknown, clock off)."""
        app, st = self.app, self.app.state
        if not app.settings.clock:
            return None
        if app.runner.running and self.t0 is not None:
            return time.monotonic() - self.t0
        if st.started_at and st.ended_at:
            return st.ended_at - st.started_at
        return None

    def _form_spec(self) -> RunSpec | None:
        """The form's spec, or None after showing the form and its first error."""
        spec, errors = self.app.main_query(SetupForm).validate()
        if spec is None:
            self.app.action_show_tab("setup")
            field, why = next(iter(errors.items()))
            self.app.notify(f"fix the form first: {error_line(field, why)}", severity="error")
        return spec

    def flops(self) -> float:
        """This machine's matmul rate (settings, else probed once)."""
        from engine.experiments.estimate import probe_flops

        if self._flops is None:
            self._flops = self.app.settings.flops_per_s or probe_flops()
        return self._flops

    def estimate(self, spec: RunSpec) -> float | None:
        """Estimated seconds of ``spec`` here (engine/experiments/estimate.py); None if unknown."""
        from engine.experiments.estimate import estimate_seconds

        try:
            return estimate_seconds([spec], flops_per_s=self.flops())
        except (EngineError, KeyError, ValueError):  # a data set the model does not know
            return None

    # -- a run -----------------------------------------------------------------------------

    def run_form(self) -> None:
        """Run the form's spec (asking first when it is estimated long)."""
        if self.app.busy:
            self.app.notify(BUSY, severity="warning")
            return
        spec = self._form_spec()
        if spec is None:
            return
        est = self.estimate(spec)
        if est is not None and est > CONFIRM_SECONDS:
            self.app.push_screen(
                ConfirmDialog(
                    f"This run is estimated at ≈ {duration(est)} on this machine.",
                    "From its FLOP count (as `malleability reproduce --dry-run`); F4 in the "
                    "form applies the quick preset (minutes).",
                    "Start it",
                ),
                lambda ok: self.start_job(spec) if ok else None,
            )
            return
        self.start_job(spec)

    def start_job(
        self, spec: RunSpec, run_dir: Path | None = None, *, resume: bool = False
    ) -> None:
        """Start ``spec`` into a new run directory under the runs root, or (``resume``)
        continue the run in ``run_dir``, skipping its finished cells."""
        from engine.run.store import default_run_dir

        app = self.app
        app.action_show_tab("training")

        def ready(store: RunStore) -> None:  # the directory is open; the job has not begun
            if resume:  # the panels show the kept cells, then the new ones arrive
                app.state = load_run_state(store.path)
                app.state.status = "running"
                app.state.log(
                    f"resumed {store.path}: {len(store.done_cells)} finished cells kept and skipped"
                )
            else:
                app.state = RunState(run_dir=str(store.path), spec=spec.to_dict(), status="running")
                app.state.log(f"started {spec.experiment} on {spec.data.name} → {store.path}")
            app.state.env = dict(store.env)

        try:
            if run_dir is None:
                app.settings.runs_root.mkdir(parents=True, exist_ok=True)
                run_dir = default_run_dir(spec, app.settings.runs_root)
            app.runner.start(app, spec, run_dir, resume=resume, before=ready)
        except (EngineError, OSError) as e:
            app.show_error("Could not start the run", error_text(e))
            return
        app.runs.refresh()
        app.refresh_bindings()  # c Cancel now applies
        self.t0 = time.monotonic()
        app.main.push_state(force=True)
        if not self._frozen_after_job:  # the first job imported the rest of the engine
            self._frozen_after_job = True
            app.call_after_refresh(app.freeze_heap)

    def job_ended(self, message: JobEnded) -> None:
        """A run is over: its last events, its env, and a word on how it ended."""
        app = self.app
        for ev in app.runner.drain():
            app.state.apply(ev)
        env = _read_env(message.run_dir)
        if env:
            app.state.env = env
        if message.status == "crashed":
            app.state.status = "failed"
        app.main.push_state(force=True)
        app.runs.refresh()
        app.refresh_bindings()
        if app.quitting:
            app.exit()
            return
        if message.status == "finished" and app.reproduction.running:
            app.state.log(f"part finished: {message.run_dir}")
        elif message.status == "finished":
            app.notify(f"run finished: {message.run_dir}", title="done")
        elif message.status == "cancelled":
            app.notify(f"cancelled; finished cells kept in {message.run_dir}", severity="warning")
        else:
            err, msg = message.error or ("Error", "the job stopped")
            app.show_error(
                f"The run failed: {err}", f"{msg}\n\nPartial results are kept in {message.run_dir}"
            )

    # -- a reproduction --------------------------------------------------------------------

    def reproduce_form(self) -> None:
        """The paper's reproduction (``malleability reproduce``) for the form's data set,
        with ``--quick`` when the form holds the quick preset; the checklist fills in live."""
        from engine.experiments.estimate import estimate_seconds

        app = self.app
        if app.busy:
            app.notify(BUSY, severity="warning")
            return
        spec = self._form_spec()
        if spec is None:
            return
        try:
            parts = reproduction_plan(spec)
            est = estimate_seconds([p.spec for p in parts], flops_per_s=self.flops())
        except (EngineError, KeyError, ValueError) as e:
            app.show_error("Could not plan the reproduction", error_text(e))
            return
        meta: dict[str, Any] = {
            "datasets": [spec.data.name],
            "tables": [1, 2, 3, 4],
            "quick": spec.quick,
        }
        if est > CONFIRM_SECONDS:
            app.push_screen(
                ConfirmDialog(
                    f"This reproduction is estimated at ≈ {duration(est)} on this machine.",
                    f"{len(parts)} runs: " + ", ".join(p.key for p in parts) + ". F4 in the "
                    "form applies the quick preset (the reproduction's --quick).",
                    "Start it",
                ),
                lambda ok: (
                    self.start_reproduction(parts, estimated_seconds=est, **meta) if ok else None
                ),
            )
            return
        self.start_reproduction(parts, estimated_seconds=est, **meta)

    def start_reproduction(self, parts: list[Any], path: Path | None = None, **meta: Any) -> None:
        """Run a reproduction's ``parts`` (``engine.reproduce.plan.plan``) into ``path``
        (default: a new ``<time>-reproduce`` folder under the runs root); ``meta``:
        datasets, tables, quick, estimated_seconds (as reproduce.json records them)."""
        app = self.app
        if path is None:
            path = app.settings.runs_root / f"{time.strftime('%Y%m%d-%H%M%S')}-reproduce"
        meta = {"datasets": [], "tables": [], "quick": False, "estimated_seconds": 0.0, **meta}
        try:
            if path.exists() and any(path.iterdir()):
                raise EngineError(f"{path} is not empty: a reproduction starts a new folder")
            app.reproduction.start(app, path, parts, **meta)
        except (EngineError, OSError, RuntimeError) as e:
            app.show_error("Could not start the reproduction", error_text(e))
            return
        self.t0 = time.monotonic()
        app.refresh_bindings()
        app.notify(f"reproduction: {len(parts)} runs into {path}")

    def part_started(self, message: PartStarted) -> None:
        """A reproduction's part began: its own state, the reproduction's plan kept."""
        app = self.app
        rep = dict(app.state.reproduction) if app.state.reproduction else {}
        rep.update(path=str(message.path), parts=list(message.parts))
        rep.setdefault("summary", {})
        app.state = RunState(
            run_dir=str(message.run_dir), spec=message.spec.to_dict(), status="running"
        )
        app.state.reproduction = rep
        app.state.log(f"reproduction part {message.key} → {message.run_dir}")
        app.main.push_state(force=True)
        app.runs.refresh()
        app.refresh_bindings()

    def part_done(self, message: PartDone) -> None:
        """A part ended: the checklist of the parts so far."""
        app = self.app
        rep = dict(app.state.reproduction)
        rep["summary"] = message.comparison
        app.state.reproduction = rep
        app.state.log(f"reproduction part {message.key} done: checklist updated")
        app.main.push_state(force=True)

    def reproduction_ended(self, message: ReproductionEnded) -> None:
        """The reproduction is over: open it (finished) or say why it stopped."""
        app = self.app
        app.refresh_bindings()
        app.runs.refresh()
        if app.quitting:
            app.exit()
        elif message.status == "finished":
            app.runs.open_reproduction(str(message.path))
        elif message.status == "cancelled":
            app.notify(
                f"reproduction cancelled; finished parts kept in {message.path}",
                severity="warning",
            )
        else:  # a failed part showed its error when it ended
            app.notify(f"reproduction stopped: {message.error}", severity="error")

    # -- stopping --------------------------------------------------------------------------

    def cancel_key(self) -> None:
        """The cancel key: stop the running job between steps."""
        app = self.app
        if not app.busy:
            app.notify("no job is running", severity="warning")
            return
        self.cancel()
        app.state.log("cancelling… (stops after the current step)", "warning")
        app.notify("cancelling: stops between steps, finished cells are kept")

    def cancel(self) -> None:
        """Cancel the running job (a reproduction: its part, and the parts after it)."""
        if self.app.reproduction.running:
            self.app.reproduction.cancel()
        else:
            self.app.runner.cancel()
