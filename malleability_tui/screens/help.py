"""HelpScreen: every key, what each panel shows, where runs go."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from malleability_tui.actions import ACTIONS, TABS

PALETTE_ONLY = ", ".join(
    a.palette_title for a in ACTIONS if a.palette_title and a.key is None and a.field_key is None
)
"""The command palette's entries that no key starts (``Reproduce the paper``)."""

HELP = f"""\
[b]malleability[/b]: why linearized attention never enters the kernel regime.

[b]Keys[/b]  1-{len(TABS)} panels · r run · c cancel · e export CSVs · s SVG screenshot
      ? help · ctrl+p command palette · q quit (cancels a running job)
[b]Palette[/b] ctrl+p, every action by name; only there: {PALETTE_ONLY}
[b]In a text field[/b] keys type: ^r run · F1 help · esc leave field · ^q quit
[b]Setup[/b]   F4 quick preset (minutes) · F6 paper preset (hours) · F2 load
        F3 save spec TOML; a run estimated over 10 min asks first
[b]Sweep[/b]   m next metric            [b]Landscape[/b]  t next 2-D surface
[b]Runs[/b]    enter open · u resume (finished cells kept) · space mark
        v compare two marked · F5 refresh

[b]Panels[/b]
  Sweep      distance to the linearized twin (or NTK) vs width, ± std; drift
  Spectra    eigenvalues of G and G³, κ(G), κ(G)³, κ(G³), width thresholds
  Flips      flip rate \\[95% CI], Spearman ρ, MLP-Attn/2L-ReLU ratio, paper
  Landscape  1-D loss curves, 2-D heatmap, Hessian top eigenvalue, trace
  Training   live loss/accuracy of the cell training now; the event log
  Claims     a reproduction's checklist; enter: the panel behind a claim

Runs go to $MALLEABILITY_RUNS or ./runs.  escape closes this help."""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP)

    def action_close(self) -> None:
        self.dismiss(None)
