"""Write docs/tui-80x24.svg: the real ``malleability-tui`` at 80×24 with a finished run open.

    python docs/tools/screenshot.py                 # trains the quick digits run first (~35 s)
    python docs/tools/screenshot.py --run RUN_DIR   # or opens a run you already have

The app is the shipped one (``MalleabilityApp``) driven headlessly by Textual's
``run_test``; the clock is off so the picture does not depend on the time of day.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "tui-80x24.svg"


def quick_run(folder: Path) -> Path:
    """The README's first run, into ``folder``/run."""
    run = folder / "run"
    cmd = [sys.executable, "-m", "malleability_tui.cli.main", "headless", "--dataset", "digits",
           "--experiment", "train", "--quick", "--quiet", "--out", str(run)]  # fmt: skip
    subprocess.run(cmd, check=True)
    return run


async def shoot(run: Path, out: Path, key: str | None) -> None:
    from malleability_tui.app import MalleabilityApp, Settings

    settings = Settings(runs_root=run.parent, open_run=str(run), clock=False)
    app = MalleabilityApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        if key:
            await pilot.press(key)
        await pilot.pause(0.5)
        app.clear_notifications()
        await pilot.pause()
        app.save_screenshot(filename=out.name, path=str(out.parent))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="a finished run directory (default: train one)")
    ap.add_argument("--key", default=None, help="a panel key to press first, e.g. 6")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = a.run or quick_run(Path(tmp))
        asyncio.run(shoot(run.resolve(), a.out, a.key))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
