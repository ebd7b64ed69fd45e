"""StatusBar: device, job status, progress, elapsed and ETA in one line."""

from __future__ import annotations

import re
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
        """Status, device, clock and ETA, progress, run name. What does not fit the width
        is given up in this order: the run name's time stamp, the experiment's message (the
        run name says it), the device, the elapsed time, then the run name is cut with … (or
        dropped); the ETA and the counters stay whole."""
        width = self.content_size.width or 10_000  # before layout: everything
        name = self.run_name
        parts: list[tuple[str, str]] = []
        for message, device, clock in ((1, 1, 1), (0, 1, 1), (0, 0, 1), (0, 0, 0)):
            parts = self._parts(message=bool(message), device=bool(device), clock=bool(clock))
            room = width - sum(len(text) for text, _ in parts) - 2
            short = fit_name(name, room)
            if not name or (short and not short.endswith("…")):
                break  # the name fits, at worst without its time stamp
        name = fit_name(name, room)  # cut with … (or gone) only when nothing else is left
        t = Text(no_wrap=True, overflow="ellipsis")
        for text, style in parts:
            t.append(text, style=style)
        if name:
            t.append(f"  {name}", style="dim")
        return t

    def _parts(self, *, message: bool, device: bool, clock: bool) -> list[tuple[str, str]]:
        """The line less the run name, as (text, style) pieces."""
        out = [(f"● {self.status}", STATUS_STYLE.get(self.status, ""))]
        if self.device and device:
            out.append((f"  {self.device}", "cyan"))
        if self.elapsed is not None:
            if clock:
                out.append((f"  ⏱ {duration(self.elapsed)}", ""))
            f = self.fraction
            if self.status == "running" and f is not None and f > 0:
                out.append((f"  ETA {duration(self.elapsed * (1 - f) / f)}", "bold"))
        p = self.progress
        if "experiments" in p:
            done, total, msg = p["experiments"]
            now = f" {msg}" if message and msg and msg != "done" else ""
            out.append((f"  experiment {min(done + 1, total)}/{total}{now}", ""))
        if "sweep" in p:
            done, total, _msg = p["sweep"]
            flight = p.get("in_flight", (0,))[0]  # parallel cells (executor ray)
            out.append(
                (f"  cell {done}/{total}" + (f" ({flight} in flight)" if flight else ""), "")
            )
        if "cell" in p:
            done, total, _msg = p["cell"]
            unit = "epoch" if self.cell_unit == "epoch" else "step"
            out.append((f" · {unit} {done}/{total}", ""))
        if "batch" in p:  # a long epoch's steps, so the line moves within it
            done, total, _msg = p["batch"]
            out.append((f" (step {done}/{total})", ""))
        return out


def fit_name(name: str, room: int) -> str:
    """``name`` in ``room`` columns: whole, else without its leading time stamp
    (``20261206-010203-``), else cut at the end with ``…``; "" when under 6 columns."""
    if len(name) <= room:
        return name
    bare = re.sub(r"^\d{8}-\d{6}-", "", name)
    if len(bare) <= room:
        return bare
    return bare[: room - 1] + "…" if room >= 6 else ""
