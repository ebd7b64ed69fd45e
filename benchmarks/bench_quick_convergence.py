"""Which cells of a preset converge: the measurement behind ``presets.QUICK``.

For each preset × data set (10-class and binary) × model, trains every width of the
preset through the production path (``RunContext.train_model``: the same subset, init,
batch order, preprocessing and, with ``train.until = "converged"``, the same stopping
rule as a run) and prints one line per (preset, task, model): converged cells / total,
cells above chance, the mean final training loss, the best test accuracy, epochs run and
seconds; ``--cells`` also prints each width.

Presets (``PRESETS``): ``paper-quick`` is the quick sizes with the paper's preprocessing
(uncentred, 10-class and binary as given); ``quick`` is ``presets.QUICK`` as it stands
(whatever it says about centring and the cap); ``center`` and ``center-until`` are
candidates: paper-quick centred, and centred with ``train.until = "converged"`` capped at
1000 epochs.

    python benchmarks/bench_quick_convergence.py --presets paper-quick,quick --datasets digits
    python benchmarks/bench_quick_convergence.py --datasets mnist,cifar10 --data-root ../shared/data

``--configs FILE,…`` measures sample configs instead: the cells each config's experiment
trains (``ntk``: its widths; ``flip``/``landscape``: ``flip.width``/``landscape.width``;
``influence_check``: its own subset and width), first seed, as the config says and with
``--center`` (``--protocols paper,centred``), so a config's note can say which cells
cannot converge and why:

    python benchmarks/bench_quick_convergence.py --configs sample_data/configs/ntk_digits_3v8_paper.toml
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from engine.models import MODEL_LABELS
from engine.reproduce.presets import apply_quick, cap_quick
from engine.run.context import RunContext
from engine.run.spec import RunSpec

ROOTS = {"mnist": "../shared/data/mnist", "cifar10": "../shared/data/cifar10"}
"""Where the shared subsets are; other data sets are looked up as usual (Fashion-MNIST:
``/usr/share/datasets/fashion-mnist`` from the Debian package)."""
BINARY = {"digits": (3, 8), "mnist": (3, 8), "fashion-mnist": (0, 6), "cifar10": (1, 0)}


def _paper_quick(spec: RunSpec) -> RunSpec:
    """The quick sizes and budget with the paper's preprocessing and fixed epochs."""
    return apply_quick(spec).replace(data__center=False, train__until="fixed")


PRESETS: dict[str, Callable[[RunSpec], RunSpec]] = {
    "paper-quick": _paper_quick,
    "center": lambda s: _paper_quick(s).replace(data__center=True),
    "center-until": lambda s: _paper_quick(s).replace(
        data__center=True, train__until="converged", train__max_epochs=1000
    ),
    "quick": apply_quick,
}


def _drain(gen):  # type: ignore[no-untyped-def]
    """Run a ``yield from`` generator to its return value."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default="paper-quick,quick", help=f"of {', '.join(PRESETS)}")
    ap.add_argument("--datasets", default="digits", help="digits, mnist, fashion-mnist, cifar10")
    ap.add_argument("--tasks", default="10-class,binary")
    ap.add_argument("--models", default="relu,attn")
    ap.add_argument("--widths", default=None, help="override the preset's widths")
    ap.add_argument("--data-root", default=None, help="parent of mnist/ and cifar10/")
    ap.add_argument("--cells", action="store_true", help="also print each width")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--configs", default="", help="sample config TOML files (see above)")
    ap.add_argument("--protocols", default="paper,centred", help="with --configs")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.configs:
        for path in args.configs.split(","):
            for proto in args.protocols.split(","):
                _config(path, proto == "centred", args.models.split(","), args.cells)
        return
    print("preset        data set            model     conv  >chance  loss   best acc  epochs   s")
    for pname in args.presets.split(","):
        for name in args.datasets.split(","):
            root = (
                f"{args.data_root}/{name}" if args.data_root and name in ROOTS else ROOTS.get(name)
            )
            for task in args.tasks.split(","):
                classes = BINARY[name] if task == "binary" else None
                spec = PRESETS[pname](RunSpec()).replace(
                    data__name=name, data__data_dir=root, data__classes=classes
                )
                if args.widths:
                    spec = spec.replace(model__widths=tuple(int(w) for w in args.widths.split(",")))
                spec, _ = cap_quick(spec)
                ctx = RunContext(spec)
                seed = spec.seeds[0]
                label = name + (f" {classes[0]}v{classes[1]}" if classes else " 10-class")
                for kind in args.models.split(","):
                    t0 = time.perf_counter()
                    tms = [_drain(ctx.train_model(kind, w, seed)) for w in spec.model.widths]
                    sec = time.perf_counter() - t0
                    conv = sum(tm.converged for tm in tms)
                    ok = sum(tm.above_chance for tm in tms)
                    loss = sum(tm.train_loss for tm in tms) / len(tms)
                    acc = max(tm.test_accuracy for tm in tms)
                    ep = "/".join(str(len(tm.history)) for tm in tms)
                    print(
                        f"{pname:13s} {label:19s} {MODEL_LABELS[kind]:8s} {conv}/{len(tms)}   "
                        f"{ok}/{len(tms)}     {loss:.3f}  {acc:.3f}     {ep:8s} {sec:.0f}",
                        flush=True,
                    )
                    if args.cells:
                        for tm in tms:
                            print(
                                f"    m={tm.width:<5d} {'C' if tm.converged else '-'} loss "
                                f"{tm.train_loss:.3f} test {tm.test_accuracy:.3f} epochs "
                                f"{len(tm.history)} {tm.seconds:.1f}s",
                                flush=True,
                            )


def _cells_of(spec: RunSpec) -> tuple[RunSpec, tuple[int, ...]]:
    """The spec whose subset the config's experiment trains on, and the widths it trains."""
    exp = spec.experiment.split(",")[0]
    if exp == "influence_check":
        ic = spec.influence_check
        return spec.replace(data__n_train=ic.n_train, data__n_test=ic.n_test), (ic.width,)
    if exp in ("flip", "advtrain"):
        return spec, (spec.flip.width,)
    if exp == "landscape":
        return spec, (spec.landscape.width,)
    return spec, spec.model.widths


def _config(path: str, center: bool, kinds: list[str], cells: bool) -> None:
    """One line per model: the config's cells (first seed) converged / total, etc."""
    spec = RunSpec.load(path).replace(data__center=center)
    spec, widths = _cells_of(spec)
    ctx = RunContext(spec)
    seed = spec.seeds[0]
    name = path.rsplit("/", 1)[-1].removesuffix(".toml")
    label = f"{name} {'centred' if center else 'paper'}"
    for kind in kinds:
        t0 = time.perf_counter()
        tms = [_drain(ctx.train_model(kind, w, seed)) for w in widths]
        sec = time.perf_counter() - t0
        conv = sum(tm.converged for tm in tms)
        ok = sum(tm.above_chance for tm in tms)
        loss = ", ".join(f"{tm.train_loss:.3f}" for tm in tms)
        ep = "/".join(str(len(tm.history)) for tm in tms)
        print(
            f"{label:40s} {MODEL_LABELS[kind]:8s} converged {conv}/{len(tms)}, above chance "
            f"{ok}/{len(tms)}, loss {loss}, best test {max(tm.test_accuracy for tm in tms):.3f}, "
            f"epochs {ep}, {sec:.0f} s",
            flush=True,
        )
        if cells:
            for tm in tms:
                print(f"    m={tm.width:<5d} {'C' if tm.converged else '-'} {tm.train_loss:.3f}")


if __name__ == "__main__":
    main()
