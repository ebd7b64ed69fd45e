"""StatusBar: device, job status, progress, elapsed and ETA in one line."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from malleability_tui.format import duration, eta

STATUS_STYLE = {
    "running": "bold yellow",
    "finished": "bold green",
    "failed": "bold red",
    "cancelled": "bold magenta",
    "interrupted": "bold magenta",
    "idle": "dim",
}


class StatusBar(Widget):
    """One line above the footer. The app sets the attributes; it only renders them."""

    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    status: reactive[str] = reactive("idle")
    device: reactive[str] = reactive("")
    run_name: reactive[str] = reactive("")
    progress: reactive[dict] = reactive(dict, always_update=True)
    elapsed: reactive[float | None] = reactive(None)

    def render(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(f"● {self.status}", style=STATUS_STYLE.get(self.status, ""))
        if self.device:
            t.append(f"  {self.device}", style="cyan")
        p = self.progress
        for task, short in (("experiments", "exp"), ("sweep", "cells"), ("cell", "ep")):
            if task in p:
                done, total, _msg = p[task]
                t.append(f"  {short} {done}/{total}")
                if task == "sweep" and p.get("in_flight", (0,))[0]:
                    t.append(f" ({p['in_flight'][0]} in flight)")
        if self.elapsed is not None:
            t.append(f"  ⏱ {duration(self.elapsed)}")
            if self.status == "running" and "sweep" in p:
                done, total, _ = p["sweep"]
                t.append(f"  ETA {duration(eta(self.elapsed, done, total))}")
        if self.run_name:
            t.append(f"  {self.run_name}", style="dim")
        return t
