"""Key → screen latency of the real ``malleability-tui`` in a terminal, as a user sees it (issue #26).

    python benchmarks/bench_tui_pty.py [--presses 24] [--rounds 2] [--epochs 400]

About 2 minutes on 2 CPU cores. Needs tmux. Each round runs, one after the other so the
machine's load is the same for both:

1. **bare**: a bare Textual app with the TUI's 8 tabs (TabbedContent, a Static per pane,
   a footer; keys 1-8) in an 80×24 tmux pane, while the same sweep trains beside it
   (``malleability headless``, at the TUI worker's priority, nice 5);
2. **tui**: ``malleability-tui SWEEP.toml`` in an 80×24 tmux pane; ``r`` starts the
   sweep from the app (its worker subprocess), and the presses start once it trains.

The sweep: a 5-width digits ntk sweep (10 classes, n_train 1000, widths 16…2048, two
models, kernel drift every 5 epochs); it is cancelled (``c``) after the presses.

A press is ``tmux send-keys`` of one of the panel keys 2-8, 1 (in turn), the clock started
just before; the pane is then read with ``capture-pane`` through one tmux control-mode
client (no process per read) every ``--poll`` ms. **first change**: the first read whose
tab bar (the two top rows) differs from the screen before the key: the first frame that
shows the key. **settled**: the last read that changed anything (the status bar's clock
row aside) before the screen stayed unchanged for ``--quiet`` ms. A live chart redraw
(the running job's, every 0.5 s) landing in that window counts as settling too.
Between presses the harness waits 0.1-0.3 s (a person's pace). Every send and every read
waits for tmux's reply to it, so a read shows the pane as it is after the send.

Where the time goes, per press (both apps run with a light trace: two wrapped functions,
``--no-trace`` drops it): **app** is key → the frame that first showed it handed to the
terminal (the app's input thread reads the key, the event loop switches the panel, lays
out and renders the screen, the writer thread writes it); **cpu** is the main thread's
CPU time over that span (the app's own work, whatever the load); **terminal** is the rest
of the first change (tmux reads and parses the frame, the next ``capture-pane``). A
``--poll`` floor is measured first: a raw program that repaints at each key (no job).

Goal (issue #26): median first change ≤ 1.5× the bare app's and ≤ 60 ms while the job
runs; p90 ≤ 150 ms.

The bare app is stock Textual: its tab bar's underline moves a refresh after its pane, so
its first change is its second frame (its panel drawn, the first, comes ~30 ms before).
malleability-tui switches in one frame (tab bar, pane and footer keys: ``PanelTabs``), so
the table gives both ratios: first change, and panel drawn (like for like).

The bare app runs without animations, as ``malleability-tui`` does by default.

``--profile FILE``: the TUI scenario runs the app under cProfile (written to FILE on exit;
read it with ``python -m pstats``), to find where a panel switch spends its time.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from engine.experiments.worker import WORKER_NICE  # noqa: E402

KEYS = "23456781"
TITLES = ("setup", "sweep", "spectra", "flips", "landscape", "training", "runs", "claims")
GOAL_RATIO, GOAL_MEDIAN, GOAL_P90 = 1.5, 0.060, 0.150
SOCKET = f"bench-tui-pty-{os.getpid()}"


def bare_app() -> None:
    """The floor: a bare Textual app with 8 tabs of static text and a footer, keys 1-8."""
    from textual.app import App, ComposeResult
    from textual.binding import Binding
    from textual.widgets import Footer, Static, TabbedContent, TabPane

    class BareApp(App):
        BINDINGS = [Binding(str(i + 1), f"show('{t}')", t) for i, t in enumerate(TITLES)]

        def __init__(self) -> None:
            super().__init__()
            self.animation_level = "none"  # as malleability-tui (the tabs' underline slide)

        def compose(self) -> ComposeResult:
            with TabbedContent(id="tabs"):
                for i, t in enumerate(TITLES):
                    with TabPane(f"{i + 1} {t}", id=t):
                        yield Static((f"{t} panel: some text to lay out and draw. " * 40).strip())
            yield Footer()

        def action_show(self, tab: str) -> None:
            self.query_one(TabbedContent).active = tab

    BareApp().run()


def trace_to(path: str) -> None:
    """Record, in this (the app's) process, when each key is read and handled and when each
    frame is written, with the main thread's CPU time, and each full (generation 2) garbage
    collection with its length; written to ``path`` at exit."""
    import atexit
    import gc
    import json

    from textual import events
    from textual._xterm_parser import XTermParser
    from textual.app import App
    from textual.drivers import _writer_thread

    log: list[tuple[str, float, float]] = []
    clock, cpu = time.perf_counter, time.thread_time
    feed, on_event, display = XTermParser.feed, App.on_event, App._display

    def traced_feed(self: Any, data: str) -> Any:
        if data:
            log.append(("read", clock(), 0.0))
        return feed(self, data)

    async def traced_on_event(self: Any, event: Any) -> None:
        if isinstance(event, events.Key):
            log.append(("key", clock(), cpu()))
        await on_event(self, event)

    def traced_display(self: Any, screen: Any, renderable: Any) -> None:
        display(self, screen, renderable)
        log.append(("frame", clock(), cpu()))

    class File:
        def __init__(self, f: Any) -> None:
            self.f, self.write, self.fileno = f, f.write, f.fileno

        def flush(self) -> None:
            self.f.flush()
            log.append(("written", clock(), 0.0))

    init = _writer_thread.WriterThread.__init__

    def traced_init(self: Any, file: Any) -> None:
        init(self, File(file))  # type: ignore[arg-type]

    gc_start: list[float] = []

    def traced_gc(phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            gc_start[:] = [clock()]
        elif gc_start:
            log.append(("gc2", gc_start[0], clock() - gc_start[0]))

    gc.callbacks.append(traced_gc)
    XTermParser.feed = traced_feed  # type: ignore[method-assign]
    App.on_event = traced_on_event  # type: ignore[method-assign]
    App._display = traced_display  # type: ignore[method-assign]
    _writer_thread.WriterThread.__init__ = traced_init  # type: ignore[method-assign]
    atexit.register(lambda: Path(path).write_text(json.dumps(log), encoding="utf-8"))


def split(log: list[list[Any]], sent: list[float], first: list[float]) -> dict[str, list[float]]:
    """Per press (sent at ``sent[i]``, first seen ``first[i]`` later): app (key → the last
    frame written before the change was seen), cpu (main thread, key handled → that
    frame), terminal (the rest)."""
    out: dict[str, list[float]] = {"app": [], "cpu": [], "terminal": []}
    for t0, f in zip(sent, first):
        seen = t0 + f
        key = next((e for e in log if e[0] == "key" and t0 <= e[1] <= seen), None)
        written = [e[1] for e in log if e[0] == "written" and t0 <= e[1] <= seen]
        if key is None or not written:
            continue
        frames = [e for e in log if e[0] == "frame" and key[1] <= e[1] <= written[-1]]
        if not frames:
            continue
        out["app"].append(written[-1] - t0)
        out["cpu"].append(frames[-1][2] - key[2])
        out["terminal"].append(seen - written[-1])
    return out


def echo_app() -> None:
    """The harness's floor: a raw-mode program that repaints the top 3 rows at each key."""
    import tty

    tty.setraw(0)
    os.write(1, b"\x1b[2J\x1b[H1 setup: echo")
    while (c := os.read(0, 1)) not in (b"", b"q"):
        os.write(1, b"\x1b[H" + c * 240)


class Pane:
    """One 80×24 tmux pane running ``cmd``, read and driven through a control-mode client."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.tmux = ["tmux", "-L", SOCKET, "-f", "/dev/null"]
        subprocess.run([*self.tmux, "kill-server"], stderr=subprocess.DEVNULL)
        envs = [f"{k}={v}" for k, v in env.items()]
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", "b", "-x", "80", "-y", "24",
             "env", *envs, *cmd],
            check=True,
        )  # fmt: skip
        subprocess.run([*self.tmux, "set-option", "-g", "window-size", "manual"], check=True)
        self.ctl = subprocess.Popen(
            [*self.tmux, "-C", "attach-session", "-t", "b"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",  # a read may cut a character of a redraw in two
            bufsize=1,
        )
        # Every command gets one %begin…%end reply, attach-session's own included: read
        # up to a marker so that each later reply answers the command just sent. (Replies
        # left unread put every screen read one reply behind, one more per key sent: the
        # latencies grew by a poll per press, ~60 ms of median on 24 presses.)
        self.flagged = False  # has tmux marked a block as this client's (flags 1)?
        self.write("refresh-client -f no-output")
        self.write("display-message -p bench-sync")
        while "bench-sync" not in self.reply():
            pass

    def write(self, line: str) -> None:
        assert self.ctl.stdin
        self.ctl.stdin.write(line + "\n")
        self.ctl.stdin.flush()

    def command(self, line: str) -> list[str]:
        """Run one tmux command through the control client; its output lines (its reply)."""
        self.write(line)
        return self.reply()

    def reply(self) -> list[str]:
        """The next reply block's lines: the reply to this client's next command. tmux
        marks the blocks of commands this client sent with flags 1 (``%begin TIME NUMBER
        1``); a block with flags 0 answers a command from elsewhere (tmux runs some for
        the pane's program) and is skipped: taking one for a reply put every later read
        one reply behind (the read after a key got the key's empty reply, a "change"
        4 ms after every key). A tmux that marks no block 1 (older ones) is read as
        before, every block a reply."""
        assert self.ctl.stdout
        out: list[str] = []
        inside = False
        for raw in self.ctl.stdout:
            s = raw.rstrip("\n")
            if s.startswith("%begin"):
                flags = s.split()[3:4]
                ours = not self.flagged or flags == ["1"]
                self.flagged = self.flagged or flags == ["1"]
                inside, out = ours, []
            elif s.startswith(("%end", "%error")) and inside:
                return out
            elif inside:
                out.append(s)
        raise RuntimeError("tmux control client ended")

    def screen(self) -> list[str]:
        return self.command("capture-pane -p -t b")

    def send(self, key: str) -> None:
        """Send ``key``; returns once tmux has written it to the program's terminal."""
        self.command(f"send-keys -t b {key}")

    def wait_for(self, text: str, timeout: float) -> bool:
        return self.wait_for_re(re.escape(text), timeout)

    def wait_for_re(self, pattern: str, timeout: float) -> bool:
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            if re.search(pattern, "\n".join(self.screen())):
                return True
            time.sleep(0.1)
        return False

    def wait_exit(self, timeout: float) -> None:
        """Wait for the pane's program to exit (the session, and so the client, ends)."""
        try:
            self.ctl.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        try:
            self.ctl.stdin.close()  # type: ignore[union-attr]
            self.ctl.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self.ctl.kill()
        subprocess.run([*self.tmux, "kill-server"], stderr=subprocess.DEVNULL)


def masked(screen: list[str]) -> list[str]:
    """The screen less the status bar's row (its clock ticks on its own)."""
    return [row for row in screen if "●" not in row and "⏱" not in row]


def press(pane: Pane, key: str, poll: float, quiet: float) -> tuple[float, ...]:
    """(sent at, first change, panel, settled): the clock when ``key`` was sent, then
    seconds to the first read with the tab bar changed, with the panel below it changed,
    and to the last change."""
    before = pane.screen()
    t0 = time.perf_counter()
    pane.send(key)
    first = panel = settled = None
    last = masked(before)
    t_last = t0
    while True:
        time.sleep(poll)
        s = pane.screen()
        now = time.perf_counter()
        if first is None and s[:2] != before[:2]:
            first = now - t0
        m = masked(s)
        if panel is None and m[2:] != masked(before)[2:]:
            panel = now - t0
        if m != last:
            last, t_last = m, now
            settled = now - t0
        elif first is not None and panel is not None and now - t_last >= quiet:
            return t0, first, panel, settled if settled is not None else first
        if now - t0 > 5.0:
            return t0, first or 5.0, panel or 5.0, 5.0


def presses(pane: Pane, n: int, poll: float, quiet: float, going: Any) -> dict[str, list[float]]:
    res: dict[str, list[float]] = {
        "sent": [],
        "first": [],
        "panel": [],
        "settled": [],
        **{f"key{k}": [] for k in KEYS},
    }
    rng = random.Random(0)
    for i in range(n):
        if not going():
            break
        t0, f, p, s = press(pane, KEYS[i % len(KEYS)], poll, quiet)
        res["sent"].append(t0)
        res["first"].append(f)
        res["panel"].append(p)
        res[f"key{KEYS[i % len(KEYS)]}"].append(f)
        res["settled"].append(s)
        time.sleep(rng.uniform(0.1, 0.3))
    return res


def child_env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "TERM": "xterm-256color", "COLORTERM": "truecolor"}


def app_cmd(a: argparse.Namespace, tmp: Path, *args: str) -> list[str]:
    """This script as the pane's program: ``args`` (the app), traced unless --no-trace."""
    tmp.mkdir(parents=True, exist_ok=True)
    trace = [] if a.no_trace else ["--trace-to", str(tmp / "trace.json")]
    freeze = ["--no-freeze"] if a.no_freeze else []
    return [sys.executable, __file__, *trace, *freeze, *args]


def with_trace(res: dict[str, list[float]], tmp: Path) -> dict[str, list[float]]:
    """``res`` and, when the app left a trace, the split of each press (``split``) and the
    app's full garbage collections while the presses ran (``gc2``, seconds each)."""
    import json

    f = tmp / "trace.json"
    if f.is_file():
        log = json.loads(f.read_text(encoding="utf-8"))
        res.update(split(log, res["sent"], res["first"]))
        if res["sent"]:
            t0, t1 = res["sent"][0], res["sent"][-1] + 0.5
            res["gc2"] = [e[2] for e in log if e[0] == "gc2" and t0 <= e[1] <= t1]
    return res


def gc_line(gc2: list[float], presses: int) -> str:
    """The full collections a run of ``presses`` saw: how many, median and longest."""
    if not gc2:
        return f"no full collection in {presses} presses"
    ms = sorted(1000 * x for x in gc2)
    return (f"{len(ms)} full collections in {presses} presses: median {statistics.median(ms):.0f}"
            f" ms, longest {ms[-1]:.0f} ms")  # fmt: skip


def run_bare(a: argparse.Namespace, spec_file: Path, tmp: Path) -> dict[str, list[float]]:
    job = subprocess.Popen(
        ["nice", "-n", str(a.nice), sys.executable, "-m", "malleability_tui.cli.main", "headless",
         "--config", str(spec_file), "--out", str(tmp / "beside-bare"), "--quiet"],
        env=dict(os.environ, **child_env()), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    pane = Pane(app_cmd(a, tmp, "--bare-app"), child_env())
    try:
        if not pane.wait_for("1 setup", 60):
            sys.exit("error: the bare app did not start:\n" + "\n".join(pane.screen()))
        time.sleep(max(0.0, 5.0 - (time.perf_counter() - a.t_started)))
        res = presses(pane, a.presses, a.poll / 1000, a.quiet / 1000, lambda: job.poll() is None)
        res["ended_early"] = [float(job.poll() is not None)]
        pane.send("C-q")
        pane.wait_exit(10)  # the app exits (and writes its trace)
    finally:
        pane.close()
        job.terminate()
        job.wait()
    return with_trace(res, tmp)


def run_tui(a: argparse.Namespace, spec_file: Path, tmp: Path) -> dict[str, list[float]]:
    env = dict(
        child_env(), MALLEABILITY_RUNS=str(tmp / "runs"), MALLEABILITY_WORKER_NICE=str(a.nice)
    )
    cmd = app_cmd(a, tmp, "--tui-app", str(spec_file))
    if a.profile:
        cmd = [sys.executable, "-m", "cProfile", "-o", str(Path(a.profile).resolve()), *cmd[1:]]
    pane = Pane(cmd, env)
    try:
        if not pane.wait_for("1 Setup", 60):
            sys.exit("error: the TUI did not start:\n" + "\n".join(pane.screen()))
        time.sleep(1.0)
        pane.send("r")
        for _ in range(300):  # the estimate may ask to confirm a long run: confirm it
            screen = "\n".join(pane.screen())
            if "● running" in screen:
                break
            if "Start it" in screen:
                pane.send("Enter")
            time.sleep(0.1)
        if not pane.wait_for("● running", 5):
            sys.exit("error: r did not start the sweep:\n" + "\n".join(pane.screen()))
        # the presses start once the sweep trains (the worker has imported torch and loaded
        # the data: an epoch past 0) and the app has answered a switch there and back; a key
        # sent while the app is still busy starting the job is read late, in a burst, and
        # would time nothing
        if not pane.wait_for_re(r"its epoch [1-9]", 120):
            sys.exit("error: the sweep did not start training:\n" + "\n".join(pane.screen()))
        pane.send("2")
        if not pane.wait_for(" vs width", 30):
            sys.exit("error: 2 did not show the Sweep panel:\n" + "\n".join(pane.screen()))
        time.sleep(2.0)
        pane.send("1")  # back to the first tab: the first press (2) switches, as in bare
        if not pane.wait_for("Data set", 30):
            sys.exit("error: 1 did not show the Setup panel:\n" + "\n".join(pane.screen()))
        time.sleep(0.5)

        def going() -> bool:
            return any("● running" in row for row in pane.screen())

        if not going():  # say why, rather than a round without presses
            print("  the sweep was not running when the presses were due; the screen:\n    "
                  + "\n    ".join(pane.screen()), file=sys.stderr)  # fmt: skip
        res = presses(pane, a.presses, a.poll / 1000, a.quiet / 1000, going)
        res["ended_early"] = [float(not going())]
        pane.send("c")
        pane.wait_for("cancelled", 20)
        pane.send("q")
        pane.wait_exit(15)  # the app exits (and writes its trace, its profile)
    finally:
        pane.close()
    return with_trace(res, tmp)


def region_names(rows: list[int], height: int) -> str:
    """The parts of the screen that ``rows`` touch: tabs (rows 0-1), footer (the last row),
    pane (the rest)."""
    parts = [("tabs", any(r < 2 for r in rows)), ("pane", any(2 <= r < height - 1 for r in rows)),
             ("keys", any(r == height - 1 for r in rows))]  # fmt: skip
    return "+".join(name for name, hit in parts if hit)


def show_frames(a: argparse.Namespace, spec_file: Path, tmp: Path) -> None:
    """``--frames``: the pieces in which each panel switch reaches the screen. The TUI is
    opened on the sweep's spec (no job); after each key the pane is read for 0.4 s and each
    change is listed with the parts it touched (the status row aside). Changes less than
    two reads apart are one frame that tmux took in in pieces."""
    env = dict(child_env(), MALLEABILITY_RUNS=str(tmp / "runs"))
    pane = Pane(app_cmd(a, tmp / "frames", "--tui-app", str(spec_file)), env)
    one, sent, slowest = 0, [], 0.0
    try:
        if not pane.wait_for("1 Setup", 60):
            sys.exit("error: the TUI did not start:\n" + "\n".join(pane.screen()))
        time.sleep(1.0)
        print("key  frames after the key: ms, parts changed (tabs, pane, keys = footer)")
        for i in range(a.frames):
            key = KEYS[i % len(KEYS)]
            before = pane.screen()
            t0 = time.perf_counter()
            pane.send(key)
            sent.append(t0)
            last = masked(before)
            seen: list[tuple[float, list[int]]] = []  # (ms, rows changed)
            while time.perf_counter() - t0 < 0.4:
                m = masked(pane.screen())
                rows = [r for r in range(max(len(m), len(last))) if m[r : r + 1] != last[r : r + 1]]
                if rows:
                    ms = 1000 * (time.perf_counter() - t0)
                    if seen and ms - seen[-1][0] < 2 * a.poll:
                        seen[-1] = (seen[-1][0], sorted(set(seen[-1][1]) | set(rows)))
                    else:
                        seen.append((ms, rows))
                    last = m
                time.sleep(a.poll / 1000)
            height = len(masked(before))
            one += len(seen) == 1
            slowest = max([slowest] + [ms for ms, _ in seen[:1]])
            print(f"  {key}  " + "; ".join(f"{ms:.0f} {region_names(r, height)}" for ms, r in seen))
            time.sleep(0.2)
        print(f"{one} of {a.frames} switches reached the screen in one frame; "
              f"the slowest first frame {slowest:.0f} ms")  # fmt: skip
        pane.send("q")
        pane.wait_exit(15)  # the app exits (and writes its trace)
    finally:
        pane.close()
    res = with_trace({"sent": sent, "first": []}, tmp / "frames")
    if "gc2" in res:
        print("the app's " + gc_line(res["gc2"], a.frames))


def stats(xs: list[float]) -> tuple[float, float]:
    ms = sorted(1000 * x for x in xs)
    return statistics.median(ms), ms[int(0.9 * (len(ms) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--presses", type=int, default=24, help="presses per scenario and round")
    ap.add_argument("--rounds", type=int, default=2, help="(bare, tui) rounds")
    ap.add_argument(
        "--epochs", type=int, default=400, help="epochs of the sweep (outlasts the presses)"
    )
    ap.add_argument(
        "--nice", type=int, default=WORKER_NICE,
        help=f"the job's niceness in both apps (default {WORKER_NICE}, the TUI worker's)",
    )  # fmt: skip
    ap.add_argument("--poll", type=float, default=4.0, help="ms between screen reads")
    ap.add_argument("--quiet", type=float, default=250.0, help="ms without change = settled")
    ap.add_argument("--profile", help="run the TUI under cProfile, writing this file")
    ap.add_argument("--no-trace", action="store_true", help="run the apps without the trace")
    ap.add_argument(
        "--frames", type=int, default=0, metavar="N",
        help="instead: list the frames each of N panel switches reaches the screen in (no job)",
    )  # fmt: skip
    ap.add_argument(
        "--no-freeze", action="store_true",
        help="run malleability-tui without its gc.freeze of the start-up heap (to compare)",
    )  # fmt: skip
    ap.add_argument("--bare-app", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--echo-app", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tui-app", help=argparse.SUPPRESS)
    ap.add_argument("--trace-to", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.trace_to:
        trace_to(a.trace_to)
    if a.tui_app:
        sys.path.insert(0, str(ROOT))
        import malleability_tui.launch as tui_module
        from malleability_tui.launch import main as tui_main

        if a.no_freeze:  # the app as before its start-up heap was frozen
            tui_module.freeze_startup_heap = lambda: None
            tui_module.MalleabilityApp.freeze_heap = lambda self: None  # type: ignore[method-assign]

        sys.argv = [sys.argv[0], a.tui_app]
        tui_main()
        return
    if a.bare_app:
        bare_app()
        return
    if a.echo_app:
        echo_app()
        return
    if shutil.which("tmux") is None:
        sys.exit("error: tmux is needed (apt-get install tmux)")
    sys.path.insert(0, str(ROOT))
    from engine.run.spec import RunSpec

    spec = RunSpec(experiment="ntk", seeds=(0,), device="cpu").replace(
        data__name="digits", data__n_train=1000, data__n_test=200,
        model__widths=(16, 64, 256, 1024, 2048), train__epochs=a.epochs, ntk__drift_every=5,
        ntk__drift_points=128,
    )  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="bench-tui-pty-"))
    spec_file = tmp / "sweep.toml"
    spec.save(spec_file)
    if a.frames:
        show_frames(a, spec_file, tmp)
        return
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average before: {load} on {os.cpu_count()} cores; 80×24 tmux pane; "
          f"{a.presses} presses × {a.rounds} rounds per app; keys {', '.join(KEYS)}")  # fmt: skip
    out: dict[str, dict[str, list[float]]] = {
        name: {"first": [], "panel": [], "settled": [], "ended_early": [], "app": [], "cpu": [],
               "terminal": [], "gc2": [], **{f"key{k}": [] for k in KEYS}}
        for name in ("bare", "tui")
    }  # fmt: skip
    pane = Pane([sys.executable, __file__, "--echo-app"], child_env())
    try:
        if not pane.wait_for("1 setup", 20):
            sys.exit("error: the echo program did not start")
        echo = presses(pane, 16, a.poll / 1000, a.quiet / 1000, lambda: True)["first"]
    finally:
        pane.close()
    e_med, e_p90 = stats(echo)
    print(f"harness floor (a raw program echoing the key, no job): median {e_med:.1f} ms, "
          f"p90 {e_p90:.1f} ms (a read every {a.poll:g} ms)")  # fmt: skip
    for r in range(a.rounds):
        for name, fn in (("bare", run_bare), ("tui", run_tui)):
            a.t_started = time.perf_counter()
            res = fn(a, spec_file, tmp / f"{name}-{r}")
            for k, v in res.items():
                if k in out[name]:
                    out[name][k] += v
            if not res["first"]:
                print(f"round {r + 1} {name}: no presses (see above)")
                continue
            print(f"round {r + 1} {name}: first change median {stats(res['first'])[0]:.0f} ms")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    floor = stats(out["bare"]["first"])[0]
    panel_floor = stats(out["bare"]["panel"])[0]
    print("\nms from the key, median (p90), while a sweep trains:")
    print(f"{'app':<16} {'n':>3} {'first change':>12} {'panel drawn':>11} {'settled':>10}"
          f" {'1st×bare':>9} {'pane×bare':>9}")  # fmt: skip
    for name in ("bare", "tui"):
        cols = " ".join(
            f"{m:>{w - 6}.0f} ({p90:>3.0f})"
            for (m, p90), w in zip(
                (stats(out[name][k]) for k in ("first", "panel", "settled")), (12, 11, 10)
            )
        )
        label = "bare Textual app" if name == "bare" else "malleability-tui"
        ratio = stats(out[name]["first"])[0] / floor
        panel_ratio = stats(out[name]["panel"])[0] / panel_floor
        print(f"{label:<16} {len(out[name]['first']):>3} {cols} {ratio:>9.2f} {panel_ratio:>9.2f}")
    print("(the bare app is stock Textual: its tab bar's underline moves a refresh after the "
          "pane,\n so its first change is its second frame; panel drawn is like for like)")  # fmt: skip
    print("\nfirst change median per key, ms:")
    for name in ("bare", "tui"):
        print(f"  {name:<5} " + " ".join(
            f"{k}:{stats(out[name][f'key{k}'])[0]:.0f}" for k in KEYS if out[name][f"key{k}"]))  # fmt: skip
    if out["tui"]["app"] and out["bare"]["app"]:
        print("\nwhere the first change's time goes, median (p90) ms, per press:")
        print(f"  {'':<6} {'app: key → frame written':>26} {'app CPU':>14} {'terminal':>14}")
        for name in ("bare", "tui"):
            parts = [stats(out[name][k]) for k in ("app", "cpu", "terminal")]
            print(f"  {name:<6} " + " ".join(
                f"{m:>{w - 6}.0f} ({p:>3.0f})" for (m, p), w in zip(parts, (26, 14, 14))))  # fmt: skip
    if any(out[n]["ended_early"] and max(out[n]["ended_early"]) for n in out):
        print("note: a sweep ended before the presses did; raise --epochs")
    f_med, f_p90 = stats(out["tui"]["first"])
    ok = lambda b: "met" if b else "MISSED"  # noqa: E731
    print("\ngoals (issue #26), first change while the sweep trains:")
    print(
        f"  median {f_med:.0f} ms ≤ {GOAL_RATIO}× bare ({floor:.0f} ms): {ok(f_med <= GOAL_RATIO * floor)}"
    )
    print(
        f"  median {f_med:.0f} ms ≤ {GOAL_MEDIAN * 1000:.0f} ms: {ok(f_med <= GOAL_MEDIAN * 1000)}"
    )
    print(f"  p90 {f_p90:.0f} ms ≤ {GOAL_P90 * 1000:.0f} ms: {ok(f_p90 <= GOAL_P90 * 1000)}")
    worst = {n: 1000 * max(out[n]["first"]) for n in out if out[n]["first"]}
    print("worst first change (no goal): " + ", ".join(f"{n} {w:.0f} ms" for n, w in worst.items()))
    if not a.no_trace:
        for n in out:
            print(f"{n}: the app's " + gc_line(out[n]["gc2"], len(out[n]["first"])))


if __name__ == "__main__":
    main()
