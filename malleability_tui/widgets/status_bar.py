"""StatusBar: device, job status, progress, elapsed and ETA in one line."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from malleability_tui.state import RunState
from malleability_tui.text import duration

STATUS_STYLE = {
    "running": "bold yellow",
    "finished": "bold green",
    "failed": "bold red",
    "cancelled": "bold magenta",
    "interrupted": "bold magenta",
    "idle": "dim",
}


class StatusBar(Widget):
    """One line above the footer. The app hands it the run's state (``show``); it renders
    the attributes."""

    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    status: reactive[str] = reactive("idle")
    device: reactive[str] = reactive("")
    run_name: reactive[str] = reactive("")
    progress: reactive[dict] = reactive(dict, always_update=True)
    elapsed: reactive[float | None] = reactive(None)
    fraction: reactive[float | None] = reactive(None)
    """Share of the whole run done (RunState.run_fraction), for the ETA."""
    cell_unit: reactive[str] = reactive("epoch")

    def show(self, st: RunState, elapsed: float | None) -> None:
        """Show ``st``'s status, device, run name and progress, and ``elapsed`` seconds."""
        self.status = st.status
        self.device = str(st.env.get("device", "")) or str((st.spec or {}).get("device", ""))
        self.run_name = Path(st.run_dir).name if st.run_dir else ""
        self.progress = dict(st.progress)
        self.fraction = st.run_fraction()
        self.cell_unit = "epoch" if st.progress_cell.startswith("train/") else "step"
        self.elapsed = elapsed

    def render(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(f"● {self.status}", style=STATUS_STYLE.get(self.status, ""))
        if self.device:
            t.append(f"  {self.device}", style="cyan")
        p = self.progress
        if "experiments" in p:
            done, total, msg = p["experiments"]
            now = f" {msg}" if msg and msg != "done" else ""
            t.append(f"  experiment {min(done + 1, total)}/{total}{now}")
        if "sweep" in p:
            done, total, _msg = p["sweep"]
            t.append(f"  cell {done}/{total}")
            if p.get("in_flight", (0,))[0]:  # parallel cells (executor ray)
                t.append(f" ({p['in_flight'][0]} in flight)")
        if "cell" in p:
            done, total, _msg = p["cell"]
            unit = "epoch" if self.cell_unit == "epoch" else "step"
            t.append(f" · its {unit} {done}/{total}")
        if self.elapsed is not None:
            t.append(f"  ⏱ {duration(self.elapsed)}")
            f = self.fraction
            if self.status == "running" and f is not None and f > 0:
                t.append(f"  ETA {duration(self.elapsed * (1 - f) / f)}")
        if self.run_name:
            t.append(f"  {self.run_name}", style="dim")
        return t
