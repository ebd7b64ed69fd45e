"""CPU of one tab switch in the TUI: the stock footer and animations against this app's choices.

    python benchmarks/bench_tab_switch.py [--rounds 6]

Trains a small run first (digits ntk sweep, a few seconds), opens it in the app at 120×40
and presses the panel keys 2-7, 1 ``--rounds`` times, each followed by 0.3 s to settle.
Per panel it prints the median latency (key → first frame showing the panel, as in
bench_tui_latency.py) and the UI process's CPU seconds per switch (the key plus its 0.3 s,
less the CPU of 0.3 s without a key). Configurations, in one process so load hits all:

* ``stock footer, animations``: Textual's ``Footer(compact=True)`` and its default
  animations (the app before issue #14's fixes);
* ``KeyFooter, animations``: this app's footer only;
* ``KeyFooter, no animations``: the app as shipped;
* the bare 7-tab app of bench_tui_latency.py, with and without animations (the floor).

The CPU a switch costs is what a training job beside the TUI loses on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tui_latency import BareApp, Probe, active  # noqa: E402
from textual.app import App  # noqa: E402
from textual.widgets import Footer  # noqa: E402

import malleability_tui.main_screen as app_module  # noqa: E402
from engine.experiments import execute  # noqa: E402
from engine.run.spec import RunSpec  # noqa: E402
from malleability_tui.app import TABS, Settings, make_app  # noqa: E402
from malleability_tui.runner import ReplayRunner  # noqa: E402

SETTLE = 0.3
KEYS = "2345671"


async def switches(app: App, rounds: int, animations: bool) -> dict[str, list[tuple[float, float]]]:
    """Panel → [(latency s, CPU s of the switch less idle)]."""
    out: dict[str, list[tuple[float, float]]] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        app.animation_level = "full" if animations else "none"
        probe = Probe(app)
        await pilot.pause(1.0)
        c = time.process_time()
        await asyncio.sleep(SETTLE)
        idle = time.process_time() - c
        for _ in range(rounds):
            for k in KEYS:
                tab = TABS[int(k) - 1]
                c = time.process_time()
                dt = await probe.press(k, active(app, tab))
                await asyncio.sleep(SETTLE)
                out.setdefault(tab, []).append((dt, time.process_time() - c - idle))
    return out


def tui(run_dir: Path, tmp: Path, stock_footer: bool) -> App:
    make_footer: Callable[[], Any] = (
        (lambda: Footer(compact=True)) if stock_footer else app_module.KeyFooter
    )
    app_module.KeyFooter = make_footer  # type: ignore[misc, assignment]  # compose() looks it up here
    return make_app(
        Settings(runs_root=tmp / "runs", export_root=tmp / "export", experiments=["ntk"],
                 spec=RunSpec(), data_choices=[], open_run=str(run_dir)),
        ReplayRunner([]),
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-tab-"))
    run_dir = tmp / "run"
    spec = RunSpec(experiment="ntk", seeds=(0,), device="cpu").replace(
        data__name="digits", data__n_train=300, data__n_test=100, model__widths=(16, 64, 256),
        train__epochs=30, ntk__drift_every=5, ntk__drift_points=64,
    )  # fmt: skip
    execute(spec, run_dir)
    key_footer = app_module.KeyFooter
    configs: list[tuple[str, Callable[[], App], bool]] = [
        ("stock footer, animations", lambda: tui(run_dir, tmp, True), True),
        ("KeyFooter, animations", lambda: tui(run_dir, tmp, False), True),
        ("KeyFooter, no animations", lambda: tui(run_dir, tmp, False), False),
        ("bare app, animations", BareApp, True),
        ("bare app, no animations", BareApp, False),
    ]
    print(f"{'configuration':28} {'panel':10} {'latency ms':>10} {'CPU ms/switch':>14}")
    for name, build, animations in configs:
        app_module.KeyFooter = key_footer  # type: ignore[misc]
        res = asyncio.run(switches(build(), a.rounds, animations))
        every = [x for xs in res.values() for x in xs]
        for tab, xs in [*res.items(), ("all", every)]:
            lat = statistics.median(1000 * x[0] for x in xs)
            cpu = statistics.median(1000 * x[1] for x in xs)
            print(f"{name:28} {tab:10} {lat:10.1f} {cpu:14.1f}")
    app_module.KeyFooter = key_footer  # type: ignore[misc]


if __name__ == "__main__":
    main()
