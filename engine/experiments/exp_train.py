"""Experiment ``train``: train each model × width × seed; loss, accuracy, epoch curves."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

from engine.experiments.events import Artifact, Event, Log, Summary, TableRow
from engine.experiments.executors import Cell, run_cells
from engine.experiments.registry import register
from engine.models import MODEL_LABELS
from engine.results import above_chance

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
    at_chance: dict[str, list[str]] = {}

    def note(row: dict) -> None:
        by_model.setdefault(row["model"], []).append(row["test_accuracy"])
        ds = ctx.dataset(seed=int(row["seed"]))
        chance = majority_rate(ds.y_test)
        if not above_chance(float(row["test_accuracy"]), ds.n_test, chance):
            at_chance.setdefault(row["model"], []).append(f"m={row['width']} seed={row['seed']}")

    for r in ctx.previous_rows("train"):
        note(r)
    for ev in run_cells(ctx, plan):
        if isinstance(ev, TableRow) and ev.table == "train":
            note(ev.row)
        yield ev
    headline = [f"{m}: best test accuracy {max(v):.3f} over {len(v)} cells" for m, v in by_model.items()]
    for m, cells in at_chance.items():
        line = (
            f"{m}: AT CHANCE in {len(cells)} of {len(by_model[m])} cells ({', '.join(cells[:6])}"
            f"{', …' if len(cells) > 6 else ''}): test accuracy not above the majority-class rate "
            "(one-sided binomial p ≥ 0.05); their numbers are not results (train longer: --epochs)"
        )
        headline.append(line)
        yield Log(line, "warning")
    yield Summary(
        "train",
        {
            "headline": headline,
            "dataset": name,
            "best_test_accuracy": {m: max(v) for m, v in by_model.items()},
            "at_chance": at_chance,
            "cells": len(plan),
        },
    )


def majority_rate(y: torch.Tensor) -> float:
    """The accuracy of always predicting the most common test label: ±1 targets [n] or
    class indices [n]."""
    _, counts = torch.unique(y.reshape(-1), return_counts=True)
    return float(counts.max()) / max(1, int(y.numel()))


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
