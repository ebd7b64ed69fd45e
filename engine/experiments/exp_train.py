"""Experiment ``train``: train each model × width × seed; loss, accuracy, epoch curves."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from engine.experiments.events import Artifact, Event, Summary, TableRow
from engine.experiments.executors import Cell, run_cells
from engine.experiments.registry import register
from engine.models import MODEL_LABELS

if TYPE_CHECKING:
    from engine.experiments.context import RunContext


@register("train", "Train 2L-ReLU and MLP-Attn per width and seed: loss, accuracy, curves", order=10, cells=True)
def run_train(ctx: RunContext) -> Iterator[Event]:
    sp = ctx.spec
    plan: list[Cell] = []
    name = sp.data.name
    for seed in sp.seeds:
        name = ctx.dataset(seed=seed).name
        for kind in sp.model.kinds:
            for width in sp.model.widths:
                label = f"train {MODEL_LABELS[kind]} m={width} seed={seed}"
                plan.append(Cell(f"train/{name}/{kind}/{width}/{seed}", train_cell, (kind, width, seed), seed, label))
    by_model: dict[str, list[float]] = {}
    for r in ctx.previous_rows("train"):
        by_model.setdefault(r["model"], []).append(r["test_accuracy"])
    for ev in run_cells(ctx, plan):
        if isinstance(ev, TableRow) and ev.table == "train":
            by_model.setdefault(ev.row["model"], []).append(ev.row["test_accuracy"])
        yield ev
    yield Summary(
        "train",
        {
            "headline": [f"{m}: best test accuracy {max(v):.3f} over {len(v)} cells" for m, v in by_model.items()],
            "dataset": name,
            "best_test_accuracy": {m: max(v) for m, v in by_model.items()},
            "cells": len(plan),
        },
    )


def train_cell(ctx: RunContext, cell: str, kind: str, width: int, seed: int) -> Iterator[Event]:
    """One cell: train ``kind`` at ``width`` for ``seed``; its curve and ``train`` row."""
    sp = ctx.spec
    ds = ctx.dataset(seed=seed)
    tm = yield from ctx.train_model(kind, width, seed)
    row = {
        "model": MODEL_LABELS[kind], "dataset": ds.name, "width": width, "seed": seed,
        "training": "standard", "epochs": sp.train.epochs, "train_loss": tm.train_loss,
        "train_accuracy": tm.train_accuracy, "test_loss": tm.test_loss,
        "test_accuracy": tm.test_accuracy, "seconds": round(tm.seconds, 3),
    }
    yield Artifact(
        "train_curve",
        {"epoch": [h["epoch"] for h in tm.history], "loss": [h["loss"] for h in tm.history],
         "accuracy": [h["accuracy"] for h in tm.history]},
        cell=cell,
    )
    yield TableRow("train", row, cell=cell)
