"""Compute engine of malleability: data, models, NTKs, spectra, attacks, influence.

Never imports textual, rich, typer, plotext or malleability_tui.
"""

__version__ = "0.1.0"
