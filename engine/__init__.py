"""Compute engine of malleability: data, models, NTKs, spectra, attacks, influence.

Never imports textual, rich, typer, plotext or malleability_tui.
"""

import os as _os

# OpenMP threads that spin while waiting for work collapse when the cores are shared (another
# job, a Ray worker per CPU, a laptop's browser): one Adam step of a 64 × 3072 layer took
# 62 ms instead of 2 ms on a loaded 2-core machine, a 30× slower training cell
# (benchmarks/bench_train.py). Sleeping waits cost little when the machine is idle. Set
# before torch loads its OpenMP runtime; an explicit OMP_WAIT_POLICY wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
