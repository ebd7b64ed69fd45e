"""Key-press latency of the TUI while a sweep trains (thread vs subprocess runner).

    python benchmarks/bench_tui_latency.py [--quick]

For each runner, starts a real training sweep on digits (torch on every core), then
presses panel keys with Textual's Pilot and times press → key handled → screen
flushed (``pilot.press`` + ``pilot.pause``). Target: median < 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.experiments.spec import RunSpec  # noqa: E402
from malleability_tui.app import Settings, make_app  # noqa: E402
from malleability_tui.runner import ReplayRunner, SubprocessRunner, ThreadRunner  # noqa: E402


async def measure(
    runner, spec: RunSpec, presses: int, warmup: float
) -> tuple[dict[str, list[float]], str]:
    tmp = Path(tempfile.mkdtemp())
    app = make_app(
        Settings(
            runs_root=tmp / "runs", export_root=tmp / "export", spec=spec, experiments=["train"]
        ),
        runner,
    )
    lat: dict[str, list[float]] = {"tab": [], "redraw": []}
    async with app.run_test(size=(120, 40)) as pilot:
        if not isinstance(runner, ReplayRunner):
            await pilot.press("ctrl+r")
            t0 = time.monotonic()
            while (
                time.monotonic() - t0 < warmup and not app.state.metrics
            ):  # wait for training to start
                await pilot.pause(0.1)
        keys = "2645"
        for i in range(presses):  # tab switches: new pane, focus, footer
            t = time.perf_counter()
            await pilot.press(keys[i % len(keys)])
            await pilot.pause()
            lat["tab"].append(time.perf_counter() - t)
            await asyncio.sleep(0.05)
        await pilot.press("2")
        for _ in range(presses):  # "m" on the sweep panel: recompute and redraw its chart
            t = time.perf_counter()
            await pilot.press("m")
            await pilot.pause()
            lat["redraw"].append(time.perf_counter() - t)
            await asyncio.sleep(0.05)
        status = app.state.status
        if runner.running:
            runner.cancel()
            runner.wait(30)
    return lat, status


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    presses = 15 if a.quick else 40
    spec = RunSpec(experiment="train", seeds=(0,), device="cpu").replace(
        data__n_train=1000,
        data__n_test=200,
        model__widths=(1024, 2048),
        train__epochs=300,
        ntk__drift_every=0,
    )
    print(
        f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
    )
    print(
        f"{'runner':<12} {'key':<7} {'presses':>7} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}  job"
    )
    for name, make in (
        ("idle", lambda: ReplayRunner([])),
        ("thread", ThreadRunner),
        ("subprocess", SubprocessRunner),
    ):
        lat, status = asyncio.run(measure(make(), spec, presses, warmup=60))
        for key, vals in lat.items():
            ms = sorted(1000 * x for x in vals)
            p90 = ms[int(0.9 * (len(ms) - 1))]
            print(
                f"{name:<12} {key:<7} {len(ms):>7} {statistics.median(ms):>10.1f} {p90:>8.1f} {ms[-1]:>8.1f}  {status}"
            )


if __name__ == "__main__":
    main()
