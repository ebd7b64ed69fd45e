"""``malleability report``: a run or reproduce directory as Markdown or HTML."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Annotated, Any

import typer

from malleability_tui.cli.common import console, die, expected_errors
from malleability_tui.cli.render import LONG_TABLES
from malleability_tui.cli.runs import RunOrReproduce, resolve_run
from malleability_tui.text import number as fmt

MAX_REPORT_ROWS = 60
Block = tuple[str, Any]  # ("h1"|"h2"|"h3"|"p"|"pre"|"img"|"table", payload)


def _series_ntk(rows: list[dict]) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """model → (widths, mean distance, sample std) over seeds."""
    from engine.results import series_over_seeds
    from engine.results.tables import NtkDistanceRow

    typed = [NtkDistanceRow.from_row(r) for r in rows]
    return {
        m: (s.x, s.mean, s.std)
        for m, s in series_over_seeds(typed, "width", "ntk_distance").items()
    }


def text_plot(
    title: str,
    series: dict[str, tuple[list[float], list[float]]],
    *,
    xlog2: bool = False,
    ylog: bool = False,
    width: int = 72,
    height: int = 16,
) -> str:
    """A plain-text braille line plot of named (x, y) series (the TUI's plotter)."""
    from malleability_tui.plots import Axis, Series, line_chart

    lines = [Series(name, xs, ys, points=xlog2) for name, (xs, ys) in series.items()]
    text = line_chart(lines, width, height, x=Axis(log2=xlog2), y=Axis(log=ylog), title=title)
    return text.plain


def _table_blocks(name: str, rows: list[dict]) -> list[Block]:
    return [("h3", f"{name}.csv"), ("table", (name, rows[:MAX_REPORT_ROWS], len(rows)))]


def _headlines(run: dict[str, Any]) -> list[str]:
    out = []
    for section, data in run["summary"].items():
        if isinstance(data, dict) and data.get("headline"):
            lines = data["headline"]
            out.append(f"{section}:\n" + "\n".join([lines] if isinstance(lines, str) else lines))
    return out


def _plots(t: dict[str, list[dict]]) -> list[str]:
    """The text plots a run's tables allow (NTK distance, spectra, 1-D landscape)."""
    from engine.results import num as _num
    from engine.results.tables import EigenvalueRow, LandscapeRow

    out = []
    if t.get("ntk_distance"):
        ser = {m: (x, y) for m, (x, y, _) in _series_ntk(t["ntk_distance"]).items()}
        out.append(text_plot("NTK distance vs width", ser, xlog2=True))
    if t.get("eigenvalues"):
        ev = [EigenvalueRow.from_row(r) for r in t["eigenvalues"]]
        idx = [_num(r.index) for r in ev]
        g = {"G": (idx, [r.eig_G for r in ev]), "G^3": (idx, [r.eig_G3 for r in ev])}
        out.append(text_plot("eigenvalues of G and G^3 (log10)", g, ylog=True))
    if t.get("landscape"):
        ls = [r for r in map(LandscapeRow.from_row, t["landscape"]) if r.direction == "1d"]
        ser = {
            m: ([r.alpha for r in ls if r.model == m], [r.loss for r in ls if r.model == m])
            for m in sorted({r.model for r in ls})
        }
        if ser:
            out.append(text_plot("1-D loss along a filter-normalised direction", ser))
    return out


def build_report(path: Path) -> list[Block]:
    """The report as blocks (rendered to Markdown or HTML), the reader's order: the
    checklist and headline numbers, the figures, the tables, then the environment and
    the spec TOML of each run."""
    from engine.run.runs import collect
    from engine.run.spec import RunSpec

    summ, runs = collect(path)
    from engine.run.paths import display_name

    blocks: list[Block] = [("h1", f"malleability report: {display_name(path.name)}")]
    if summ is not None:
        from malleability_tui.views.claims import checklist_lines

        blocks.append(("h2", "Claims checklist"))
        blocks.append(("pre", "\n".join(checklist_lines(summ)) or "(no claims)"))
    heads = [(label, _headlines(run)) for label, run in runs]
    if any(h for _, h in heads):
        blocks.append(("h2", "Headline numbers"))
        for label, h in heads:
            if h:
                blocks.append(("h3", label))
                blocks.extend(("pre", x) for x in h)
    images = sorted((path / "figures").glob("*.png")) + sorted((path / "figures").glob("*.svg"))
    plots = [(label, _plots(run["tables"])) for label, run in runs]
    if images or any(p for _, p in plots):
        blocks.append(("h2", "Figures"))
        blocks.extend(("img", f.relative_to(path).as_posix()) for f in images)
        for label, ps in plots:
            blocks.extend(("pre", f"{label}: {p}" if len(runs) > 1 else p) for p in ps)
    if summ is not None:
        from malleability_tui.views.claims import checklist_details, comparison_rows

        blocks.append(("h2", "Paper beside ours"))
        blocks.append(
            (
                "p",
                "Paper (arXiv 2603.13085 v1) beside ours; ours are mean ± std over seeds; "
                "flip rates in %, with pooled 95% Wilson intervals.",
            )
        )
        for title, rows in comparison_rows(summ):
            blocks.append(("h3", title))
            blocks.append(("table", (title, rows, len(rows))))
        blocks.append(("h3", "Claims in detail"))
        blocks.extend(("p", d) for d in checklist_details(summ))
    for label, run in runs:
        blocks.append(("h2", f"Run {label}: tables"))
        for name, rows in run["tables"].items():
            if rows and name not in LONG_TABLES:
                blocks.extend(_table_blocks(name, rows))
            elif rows:
                blocks.append(("p", f"{name}.csv: {len(rows)} rows (not shown)"))
    blocks.append(("h2", "Environment and specs"))
    for label, run in runs:
        env = run["env"]
        blocks.append(("h3", f"Run {label}"))
        blocks.append(
            (
                "p",
                f"status {env.get('status', '?')}; device {env.get('device', '?')}; torch {env.get('torch', '?')}; "
                f"started {env.get('start_time', '?')}, ended {env.get('end_time', '?')}; host {env.get('host', '?')}",
            )
        )
        blocks.append(("pre", RunSpec.from_dict(run["spec"]).to_toml()))
    return blocks


def _md_table(rows: list[dict], total: int) -> str:
    if not rows:
        return "(empty)\n"
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(fmt(_maybe_num(r.get(c))) for c in cols) + " |" for r in rows]
    if total > len(rows):
        out.append(f"\n… {total - len(rows)} more rows in the CSV")
    return "\n".join(out) + "\n"


def _maybe_num(v: Any) -> Any:
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return v
        return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f
    return v


def to_markdown(blocks: list[Block]) -> str:
    out = []
    for kind, val in blocks:
        if kind == "h1":
            out.append(f"# {val}\n")
        elif kind == "h2":
            out.append(f"## {val}\n")
        elif kind == "h3":
            out.append(f"### {val}\n")
        elif kind == "p":
            out.append(f"{val}\n")
        elif kind == "pre":
            out.append(f"```\n{val.rstrip()}\n```\n")
        elif kind == "img":
            out.append(f"![{val}]({val})\n")
        elif kind == "table":
            _, rows, total = val
            out.append(_md_table(rows, total))
    return "\n".join(out)


def to_html(blocks: list[Block]) -> str:
    body = []
    for kind, val in blocks:
        if kind in ("h1", "h2", "h3"):
            body.append(f"<{kind}>{html.escape(val)}</{kind}>")
        elif kind == "p":
            body.append(f"<p>{html.escape(val)}</p>")
        elif kind == "pre":
            body.append(f"<pre>{html.escape(val)}</pre>")
        elif kind == "img":
            src = html.escape(val, quote=True)
            body.append(f"<p><img src='{src}' alt='{src}' style='max-width:100%'></p>")
        elif kind == "table":
            _, rows, total = val
            if not rows:
                continue
            cols = list(rows[0])
            head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
            trs = "".join(
                "<tr>"
                + "".join(f"<td>{html.escape(fmt(_maybe_num(r.get(c))))}</td>" for c in cols)
                + "</tr>"
                for r in rows
            )
            more = f"<p>… {total - len(rows)} more rows in the CSV</p>" if total > len(rows) else ""
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{trs}</tbody></table>{more}")
    style = (
        "body{font-family:system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;"
        "font-size:90%}pre{background:#f6f6f6;padding:.5em;overflow-x:auto}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>malleability report</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n"
    )


def report_cmd(
    run: RunOrReproduce,
    format: Annotated[str, typer.Option("--format", "-f", help="md or html.")] = "md",
    to: Annotated[
        Path | None, typer.Option("--to", help="Output file (default <run>/report.<format>).")
    ] = None,
) -> None:
    """Write a self-contained report: spec, environment, every table, the checklist, plots."""
    if format not in ("md", "html"):
        die(f"invalid --format {format!r}: md or html")
    from engine.run.paths import atomic_write, check_file_target

    with expected_errors():
        path = resolve_run(run, None, reproduce=True)
        own = path / f"report.{format}"
        target = check_file_target(to or own, "to", own=own)
        blocks = build_report(path)
        text = to_markdown(blocks) if format == "md" else to_html(blocks)
        atomic_write(target, text)
    console.print(f"wrote {target}", highlight=False)
