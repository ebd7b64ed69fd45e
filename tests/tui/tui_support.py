"""Canned events of a small but complete run, and helpers to build the app around them.

Test modules import these as ``from tui_support import ...`` (a name of its own: ``from
conftest import ...`` picks whichever conftest.py was imported last when several test
folders run together, e.g. ``pytest tests/tui/test_format.py tests/reliability``)."""

from __future__ import annotations

import math
from pathlib import Path

from engine.run.events import (
    Artifact,
    CellFinished,
    Failed,
    Finished,
    Log,
    Metric,
    Progress,
    Started,
    Summary,
    TableRow,
)
from engine.run.spec import RunSpec
from engine.run.store import RunStore
from malleability_tui.app import Settings, make_app
from malleability_tui.runner import ReplayRunner
from malleability_tui.widgets.setup_form import DataChoice

SPEC = RunSpec(experiment="all", seeds=(0, 1), device="cpu").replace(
    model__widths=(16, 64, 256),
    data__n_train=100,
    data__n_test=20,
    train__epochs=5,
    flip__eps=(0.3,),
)
CHOICES = [
    DataChoice("digits", True, "built in", ""),
    DataChoice("mnist", False, "", "run `malleability data fetch mnist`"),
]
EXPERIMENTS = ["train", "spectrum", "ntk", "flip", "landscape"]
MODELS = (("relu", "2L-ReLU"), ("attn", "MLP-Attn"))
FLOPS = 2e10
"""A fixed matmul rate for run-time estimates (tests never time the machine)."""


GUARDS_OK = {"converged": True, "above_chance": True, "stuck": False}
"""Every canned cell passes the guards (tests that need a failing one change the rows)."""


def _ntk_row(label: str, width: int, seed: int) -> dict:
    base = 40.0 if label == "2L-ReLU" else 10.0 * math.log2(width) / 4
    v = base + seed * 0.5
    return {
        "model": label,
        "dataset": "digits",
        "width": width,
        "seed": seed,
        "ntk_distance": v,
        "ntk_distance_rel": v / 100,
        "kernel_distance_init": 1.0 / width,
        "kernel_distance_final": 2.0 / width,
        "kernel_drift": 0.01 * (seed + 1) * (64 / width),
        "train_loss": 0.1,
        "test_accuracy": 0.9,
        "lin_distance": v / 10,
        "lin_distance_rel": 0.1 if label == "2L-ReLU" else 0.8,
        "lin_test_accuracy": 0.88,
        **GUARDS_OK,
    }


def canned_events(fail: str | None = None) -> list:
    """A deterministic run: sweep (2 models × 3 widths × 2 seeds), spectrum, flips, landscape.

    ``fail``: end with ``Failed(fail, ...)`` after the sweep instead of finishing.
    """
    ev: list = [Started("all", SPEC.to_dict(), time=1000.0), Log("device: cpu, dtype: float32")]
    ev.append(Progress("experiments", 0, 4, "ntk"))
    cells = [(s, k, lab, w) for s in (0, 1) for k, lab in MODELS for w in (16, 64, 256)]
    for i, (seed, kind, label, width) in enumerate(cells):
        cell = f"ntk/digits/{kind}/{width}/{seed}"
        ev.append(Progress("sweep", i, len(cells), f"ntk {label} m={width} seed={seed}"))
        for ep in range(1, 6):
            ev.append(Metric("train_loss", 1.0 / ep, ep, cell=cell))
            ev.append(Metric("train_accuracy", 0.5 + 0.08 * ep, ep, cell=cell))
            ev.append(Metric("kernel_drift", 0.02 * ep * 64 / width, ep, cell=cell))
            ev.append(Progress("cell", ep, 5, f"{kind} m={width}", cell=cell))
        ev.append(
            Artifact(
                "drift",
                {"epochs": [1, 2, 3, 4, 5], "drift": [0.02 * e * 64 / width for e in range(1, 6)]},
                cell=cell,
            )
        )
        ev.append(
            Artifact(
                "train_curve",
                {
                    "epoch": [1, 2, 3, 4, 5],
                    "loss": [1.0 / e for e in range(1, 6)],
                    "accuracy": [0.5 + 0.08 * e for e in range(1, 6)],
                },
                cell=cell,
            )
        )
        ev.append(TableRow("ntk_distance", _ntk_row(label, width, seed), cell=cell))
        ev.append(CellFinished(cell))
    ev.append(Progress("sweep", len(cells), len(cells), "ntk done"))
    ev.append(
        Summary(
            "ntk",
            {
                "headline": [
                    "MLP-Attn NTK distance grows with width: 10 → 20",
                    "2L-ReLU stays at 40",
                ]
            },
        )
    )
    if fail:
        ev.append(
            Failed(fail, "training diverged: loss is nan at epoch 3 (MLP-Attn m=256)", time=1010.0)
        )
        return ev
    ev.append(Progress("experiments", 1, 4, "spectrum"))
    cell = "spectrum/digits/0"
    eig = [10.0 ** (2 - 0.25 * i) for i in range(40)]
    ev.append(
        TableRow(
            "spectrum",
            {
                "dataset": "digits",
                "n": 100,
                "d": 64,
                "rank": 40,
                "rtol": 1e-12,
                "kappa_G": 1e7,
                "kappa_G_cubed": 1e21,
                "kappa_G3_direct": 9.9e20,
                "kappa_d": 1e7,
                "width_threshold_v1": 1e42,
                "width_threshold_v2": 4.6e44,
            },
            cell=cell,
        )
    )
    for j, e in enumerate(eig):
        ev.append(TableRow("eigenvalues", {"index": j + 1, "eig_G": e, "eig_G3": e**3}, cell=cell))
    ev.append(
        Artifact(
            "eigenvalues",
            {"dataset": "digits", "rank": 40, "eig_G": eig, "eig_G3": [e**3 for e in eig]},
            cell=cell,
        )
    )
    ev.append(CellFinished(cell))
    ev.append(
        Summary(
            "spectrum",
            {"headline": ["κ(G) = 1e7, κ(G³) = 9.9e20 ≈ κ³"], "largest_model_parameters": 1e12},
        )
    )
    ev.append(Progress("experiments", 2, 4, "flip"))
    for training in ("standard", "adversarial"):
        for seed in (0, 1):
            cell = f"flip/digits/{training}/{seed}"
            for _kind, label in MODELS:
                for attack in ("fgsm", "pgd"):
                    fr = (
                        (0.05 if label == "2L-ReLU" else 0.30)
                        + 0.01 * seed
                        + (0.3 if training == "adversarial" else 0)
                    )
                    ev.append(
                        TableRow(
                            "flip_rates",
                            {
                                "model": label,
                                "dataset": "digits",
                                "attack": attack,
                                "eps": 0.3,
                                "training": training,
                                "seed": seed,
                                "flip_rate": fr,
                                "spearman": 0.9 - fr,
                                "topk_overlap": 0.8,
                                "n_selected": 10,
                                # integer flips; their sums over seeds equal round(Σ fr · 10)
                                "n_flipped": math.floor(fr * 10 + 0.49),
                                "ridge": "objective:0.15",
                                "ranking": "abs_signed_mean",
                                "n_helpful": 6,
                                "flipped_helpful": math.floor(fr * 10 + 0.49),
                                "flipped_harmful": 0,
                                **GUARDS_OK,
                            },
                            cell=cell,
                        )
                    )
            ev.append(CellFinished(cell))
    ev.append(Progress("experiments", 3, 4, "landscape"))
    cell = "landscape/digits/0"
    for _kind, label in MODELS:
        for i in range(11):
            a = -1 + 0.2 * i
            ev.append(
                TableRow(
                    "landscape",
                    {
                        "model": label,
                        "direction": "random",
                        "alpha": a,
                        "beta": "",
                        "loss": 0.1 + (a * a) * (1 if label == "2L-ReLU" else 3),
                    },
                    cell=cell,
                )
            )
        for i in range(7):
            for j in range(7):
                a, b = -1 + i / 3, -1 + j / 3
                ev.append(
                    TableRow(
                        "landscape",
                        {
                            "model": label,
                            "direction": "random2d",
                            "alpha": a,
                            "beta": b,
                            "loss": 0.1 + a * a + 2 * b * b,
                        },
                        cell=cell,
                    )
                )
        ev.append(
            TableRow(
                "sharpness",
                {
                    "model": label,
                    "seed": 0,
                    "hessian_top_eig": 12.5 if label == "2L-ReLU" else 48.0,
                    "hessian_trace": 30.0 if label == "2L-ReLU" else 95.0,
                    "width_1d": 0.6 if label == "2L-ReLU" else 0.3,
                    "width_delta": 0.1,
                    "width_censored": False,
                    "width_span": 1.0,
                    "adaptive_sharpness": 0.0066 if label == "2L-ReLU" else 0.0057,
                    "adaptive_rho": 0.5,
                    **GUARDS_OK,
                },
                cell=cell,
            )
        )
    ev.append(CellFinished(cell))
    ev.append(Progress("experiments", 4, 4, "done"))
    ev.append(Finished({}, time=1042.0))
    return ev


def write_run(path: Path, events: list | None = None) -> Path:
    """Write ``events`` through the real RunStore into ``path`` (a finished run directory)."""
    store = RunStore(path, SPEC)
    for e in events if events is not None else canned_events():
        store.write(e)
    store.close("finished")
    return path


def write_interrupted_run(path: Path, cells: int = 2) -> Path:
    """The canned run killed after ``cells`` finished cells (status interrupted, as after a
    SIGKILL: the store reads a ``running`` run without a live writer that way)."""
    events = canned_events()
    cut = [i for i, e in enumerate(events) if isinstance(e, CellFinished)][cells - 1] + 5
    store = RunStore(path, SPEC)
    for e in events[:cut]:
        store.write(e)
    store.close("interrupted")
    return path


def make_test_app(tmp_path: Path, runner=None, **kw):
    s = Settings(
        runs_root=tmp_path / "runs",
        export_root=tmp_path / "export",
        spec=kw.pop("spec", SPEC),
        data_choices=CHOICES,
        experiments=EXPERIMENTS,
        clock=False,
        refresh_interval=0.05,
        flops_per_s=kw.pop("flops_per_s", FLOPS),
        **kw,
    )
    return make_app(s, runner if runner is not None else ReplayRunner(canned_events()))


def screen_text(app) -> str:
    """The visible screen as lines of text (styles dropped)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip).rstrip() for strip in strips)


async def wait_job(pilot, app, timeout: float = 10.0) -> None:
    """Let the app's job run until it ends (or ``timeout`` seconds)."""
    for _ in range(int(timeout / 0.05)):
        await pilot.pause(0.05)
        if not app.runner.running and app.state.status != "running":
            break
    await pilot.pause(0.1)


def run_dirs(tmp_path: Path) -> list[Path]:
    """The run directories under ``tmp_path/runs``, oldest first."""
    root = tmp_path / "runs"
    return sorted(p for p in root.iterdir() if (p / "spec.toml").exists()) if root.exists() else []


async def footer_text(pilot, app, timeout: float = 3.0) -> str:
    """The footer's line once it has (re)drawn: it recomposes after the bindings change."""
    line = ""
    for _ in range(int(timeout / 0.05)):
        await pilot.pause(0.05)
        line = screen_text(app).splitlines()[-1]
        if not line.lstrip().startswith("●"):  # the status bar's line: footer not drawn yet
            return line
    return line
