"""Experiment ``train``: train each model × width × seed; loss, accuracy, epoch curves."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from engine.experiments.events import Artifact, CellFinished, Event, Progress, Summary, TableRow
from engine.experiments.registry import register
from engine.models import MODEL_LABELS

if TYPE_CHECKING:
    from engine.experiments.context import RunContext


@register("train", "Train 2L-ReLU and MLP-Attn per width and seed: loss, accuracy, curves", order=10)
def run_train(ctx: RunContext) -> Iterator[Event]:
    sp = ctx.spec
    cells = [(s, k, w) for s in sp.seeds for k in sp.model.kinds for w in sp.model.widths]
    by_model: dict[str, list[float]] = {}
    for r in ctx.previous_rows("train"):
        by_model.setdefault(r["model"], []).append(r["test_accuracy"])
    name = sp.data.name
    for i, (seed, kind, width) in enumerate(cells):
        ds = ctx.dataset(seed=seed)
        name = ds.name
        cell = f"train/{ds.name}/{kind}/{width}/{seed}"
        yield Progress("sweep", i, len(cells), f"train {MODEL_LABELS[kind]} m={width} seed={seed}")
        if ctx.is_done(cell):
            continue
        tm = yield from ctx.train_model(kind, width, seed)
        row = {
            "model": MODEL_LABELS[kind], "dataset": ds.name, "width": width, "seed": seed,
            "training": "standard", "epochs": sp.train.epochs, "train_loss": tm.train_loss,
            "train_accuracy": tm.train_accuracy, "test_loss": tm.test_loss,
            "test_accuracy": tm.test_accuracy, "seconds": round(tm.seconds, 3),
        }
        by_model.setdefault(MODEL_LABELS[kind], []).append(tm.test_accuracy)
        yield Artifact(
            "train_curve",
            {"epoch": [h["epoch"] for h in tm.history], "loss": [h["loss"] for h in tm.history],
             "accuracy": [h["accuracy"] for h in tm.history]},
            cell=cell,
        )
        yield TableRow("train", row, cell=cell)
        yield CellFinished(cell)
    yield Progress("sweep", len(cells), len(cells), "train done")
    yield Summary(
        "train",
        {
            "headline": [f"{m}: best test accuracy {max(v):.3f} over {len(v)} cells" for m, v in by_model.items()],
            "dataset": name,
            "best_test_accuracy": {m: max(v) for m, v in by_model.items()},
            "cells": len(cells),
        },
    )
