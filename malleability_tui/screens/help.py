"""HelpScreen: every key, what each panel shows, where runs go."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
[b]malleability[/b]: why linearized attention never enters the kernel regime.

[b]Keys (everywhere)[/b]
  1-7 / tab      panels: Setup, Sweep, Spectra, Flips, Landscape, Training, Runs
  ctrl+r / r     run the spec of the Setup panel       c       cancel the job
  e              export the run's CSVs                 s       SVG screenshot
  ? / F1         this help                             ctrl+p  command palette
  escape         leave a text field (then keys work)   q / ctrl+q  quit
[b]Setup[/b]     F2 load spec TOML · F3 save spec TOML · Quick preset button
[b]Sweep[/b]     m next metric   [b]Landscape[/b] t next 2-D surface
[b]Runs[/b]      enter open · space mark · v compare two marked · F5 refresh

[b]Panels[/b]
  Sweep      NTK distance vs width (log₂), mean ± std over seeds, live kernel drift
  Spectra    eigenvalues of G and G³ (log), κ(G), κ(G)³, κ(G³), width thresholds
  Flips      flip rate ± CI95, Spearman ρ, MLP-Attn/2L-ReLU ratio, the paper's value
  Landscape  1-D loss curves, 2-D heatmap, Hessian top eigenvalue and trace
  Training   live loss/accuracy of the cell training now; events and log

Quitting while a job runs cancels it; finished cells stay in its run directory
($MALLEABILITY_RUNS or ./runs). Press escape to close this help.
"""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 84; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP)

    def action_close(self) -> None:
        self.dismiss(None)
