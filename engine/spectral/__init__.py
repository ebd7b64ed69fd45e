"""Gram spectra, condition numbers, width thresholds and kernel alignment (docs/protocol.md#models, docs/protocol.md#spectra).

``spectrum(x)`` is the entry point: eigenvalues of G = XXᵀ and of the attention kernel
G³ from float64 SVDs, the numerical rank, κ(G), κ(G)³, κ(G³) measured directly, κ_d and
the width thresholds of the paper.
"""

from engine.spectral.alignment import (
    KERNELS,
    KernelPair,
    RidgeResult,
    alignment_share,
    eigen_target_set,
    eigen_targets,
    fit_targets,
    kernel_alignment,
    kernel_ridge,
    label_targets,
    study_kernels,
)
from engine.spectral.kernels import KernelSpectrum, attention_features, kernel_spectrum, ntk_spectra
from engine.spectral.paper import PAPER_SPECTRA, PaperSpectrum, paper_spectrum
from engine.spectral.ridge import ridge_solve
from engine.spectral.spectrum import (
    Spectrum,
    attention_output,
    cubed_gram_eigenvalues,
    default_rtol,
    gram_eigenvalues,
    gram_spectra,
    numerical_rank,
    spectrum,
)
from engine.spectral.synthetic import (
    SweepRow,
    first_unresolved,
    geometric_singular_values,
    prescribed_spectrum,
    synthetic_sweep,
    write_sweep_csv,
)
from engine.spectral.thresholds import (
    LARGEST_MODEL,
    WidthThresholds,
    n_ln_n,
    orders_beyond,
    width_thresholds,
)

__all__ = [
    "KERNELS",
    "LARGEST_MODEL",
    "PAPER_SPECTRA",
    "KernelPair",
    "KernelSpectrum",
    "PaperSpectrum",
    "RidgeResult",
    "Spectrum",
    "SweepRow",
    "WidthThresholds",
    "alignment_share",
    "attention_features",
    "attention_output",
    "cubed_gram_eigenvalues",
    "default_rtol",
    "eigen_target_set",
    "eigen_targets",
    "first_unresolved",
    "fit_targets",
    "geometric_singular_values",
    "gram_eigenvalues",
    "gram_spectra",
    "kernel_alignment",
    "kernel_ridge",
    "kernel_spectrum",
    "label_targets",
    "n_ln_n",
    "ntk_spectra",
    "numerical_rank",
    "orders_beyond",
    "paper_spectrum",
    "prescribed_spectrum",
    "ridge_solve",
    "spectrum",
    "study_kernels",
    "synthetic_sweep",
    "width_thresholds",
    "write_sweep_csv",
]
