"""The reproduction's comparison as rows of text: paper beside ours, and the checklist.

Pure (no rich, no textual): ``malleability reproduce`` prints these rows as tables, the
report as Markdown/HTML tables, the TUI's Claims panel as lines. Numbers go through
``malleability_tui.text``.
"""

from __future__ import annotations

from typing import Any

from engine.reproduce.claims import NO_DATA, NOT_RUN
from engine.results import flip_text, num
from malleability_tui.text import MISSING
from malleability_tui.text import number as fmt

VERDICT_MARK = {"holds": "✓", "does not hold": "✗", "inconclusive": "?", NO_DATA: "·"}
"""A verdict's one-character mark in the checklist's lines."""

SHORT_CLAIM = {
    1: "NTK non-convergence",
    2: "κ(G³) = κ(G)³",
    3: "influence malleability",
    4: "adversarial training",
    5: "dual implication",
    6: "flatter minima",
    7: "QKV non-convergence",
}
"""Each claim's name in the checklist's one line (its full title is in the details)."""


CHECKLIST_TITLE = "Claims checklist (rules: docs/claims.md#rules)"


def _pm(c: dict[str, Any], key: str = "mean", unit: str = "") -> str:
    if c.get("status") == NO_DATA:
        return "no data"
    m, s = c.get(key), c.get("std")
    if m is None:
        return "no data"
    return f"{fmt(m)}{unit} ± {fmt(s)}{unit}" if s else f"{fmt(m)}{unit}"


def _ours_flip(c: dict[str, Any]) -> str:
    """Percent: mean ± std [pooled 95% Wilson interval], as the TUI's flips panel prints it."""
    if c.get("status") == NO_DATA or c.get("mean") is None:
        return "no data"
    return flip_text(
        num(c["mean"]), num(c.get("std")), num(c.get("ci_low")), num(c.get("ci_high")), scale=1
    )


def comparison_rows(cmp: dict[str, Any]) -> list[tuple[str, list[dict[str, str]]]]:
    """(title, rows of strings) for Tables 1–4, κ and the checklist: paper beside ours."""
    out: list[tuple[str, list[dict[str, str]]]] = []
    out.append(
        (
            "Table 1: NTK distance ‖f_m − f_NTK‖ (mean ± std over seeds)",
            [
                {
                    "dataset": c["dataset"],
                    "model": c["model"],
                    "m": str(c["width"]),
                    "paper": fmt(c.get("paper")) or MISSING,
                    "ours": _pm(c),
                }
                for c in cmp.get("table1", [])
            ],
        )
    )
    for n, title in ((2, "Table 2: flip rate %, 10-class"), (3, "Table 3: flip rate %, binary")):
        out.append(
            (
                f"{title} (ours: mean ± std [95% CI]; ratio = MLP-Attn / 2L-ReLU)",
                [
                    {
                        "dataset": c["dataset"],
                        "model": c["model"],
                        "attack": c["attack"],
                        "paper": fmt(c.get("paper")) or MISSING,
                        "ours": _ours_flip(c),
                        "ratio": fmt(c.get("ratio")),
                        "paper ratio": fmt(c.get("paper_ratio")) or MISSING,
                    }
                    for c in cmp.get(f"table{n}", [])
                ],
            )
        )
    out.append(
        (
            "Claim 3 sensitivity: MLP-Attn / 2L-ReLU flip-rate ratio (pooled %, MLP-Attn vs 2L-ReLU) per protocol",
            grid_rows(cmp.get("flip_grid", [])),
        )
    )
    rows4 = []
    for c in cmp.get("table4", []):
        paper = (
            f"{fmt(c.get('paper_standard'))} → {fmt(c.get('paper_adversarial'))}"
            if c.get("paper_standard")
            else MISSING
        )
        ours = (
            "no data"
            if c.get("status") == NO_DATA
            else f"{_ours_flip(c['standard'])} → {_ours_flip(c['adversarial'])}"
        )
        rows4.append({"dataset": c["dataset"], "model": c["model"], "paper": paper, "ours": ours})
    out.append(("Table 4: PGD flip rate %, standard → adversarial training", rows4))
    rows_k = []
    for c in cmp.get("kappa", []):
        nd = c.get("status") == NO_DATA
        rows_k.append(
            {
                "dataset": c["dataset"],
                "paper κ": fmt(c.get("paper_kappa")) or MISSING,
                "ours κ(G)": "no data" if nd else fmt(c.get("kappa_G")),
                "n": "" if nd else fmt(c.get("n")),
                "rank": "" if nd else fmt(c.get("rank")),
                "κ(G)³": "" if nd else fmt(c.get("kappa_G_cubed")),
                "κ(G³) measured": "" if nd else fmt(c.get("kappa_G3_direct")),
            }
        )
    out.append(("κ(G) of the training subset", rows_k))
    out.append(
        (
            CHECKLIST_TITLE,
            [
                {
                    "#": str(c["claim"]),
                    "dataset": c.get("dataset", ""),
                    **({"protocol": c["protocol"]} if c.get("protocol") else {}),
                    "claim": c["title"],
                    "statistic": c["statistic"],
                    "verdict": c["verdict"],
                }
                for c in cmp.get("checklist", [])
            ],
        )
    )
    return out


def grid_rows(cells: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One row per data set × task × ridge rule × ranking, one column per attack."""
    out: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for c in cells:
        key = (c["dataset"], c["task"], c["rule"], c["ranking"])
        row = out.setdefault(
            key,
            {
                "dataset": c["dataset"],
                "task": c["task"],
                "ridge": c["ridge"],
                "ranking": c["ranking"],
            },
        )
        rates = (
            f"{fmt(c['attn'])} vs {fmt(c['relu'])}"
            if c["attn"] is not None and c["relu"] is not None
            else "no data"
        )
        row[c["attack"]] = (f"×{c['ratio']:.2f} " if c["ratio"] is not None else "") + f"({rates})"
    return list(out.values())


def verdict_mark(verdict: str) -> str:
    """``✓`` holds, ``✗`` does not hold, ``?`` inconclusive (whatever its reason), ``·`` no data."""
    return VERDICT_MARK.get(verdict.split(":", 1)[0], "?")


SHORT_SWEEP = {"Adam, 10-class": "Adam", "full-batch GD, binary": "GD, binary"}
"""A claim-1 sweep's name in the protocol columns' lines (the full name is in the details)."""


def _rows(cmp: dict[str, Any]) -> list[tuple[tuple[Any, ...], dict[str, dict[str, Any]]]]:
    """The checklist grouped by (claim, data set, sweep): protocol ('' for one) → item."""
    rows: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for c in cmp.get("checklist", []):
        key = (c["claim"], str(c.get("dataset", "")), c.get("sweep") or "")
        rows.setdefault(key, {})[str(c.get("protocol", ""))] = c
    return list(rows.items())


def checklist_lines(cmp: dict[str, Any]) -> list[str]:
    """The claims checklist, one line per claim and data set, each within 80 columns:
    ``✓ 1 mnist          holds          NTK non-convergence`` (the statistic and the
    full title are in ``checklist_details``). When the reproduction ran several
    protocols (``cmp["protocols"]``), a header line and one verdict column per protocol:
    ``1 mnist   ✗ does not hold ✓ holds         NTK non-convergence``."""
    items = cmp.get("checklist", [])
    wd = max([7, *(len(str(c.get("dataset", ""))) for c in items)])
    protocols = list(cmp.get("protocols") or [])
    out = []
    if protocols:
        out.append(f"# {'data':<{wd}} " + "".join(f"{p:<16}" for p in protocols) + "claim")
    for (claim, ds, _), by in _rows(cmp):
        first = by[""] if "" in by else next(iter(by.values()))
        if not protocols:
            verdict = str(first["verdict"])
            out.append(
                f"{verdict_mark(verdict)} {claim} {ds:<{wd}} {_short_verdict(verdict):<14} "
                f"{_short_name(first)}".rstrip()
            )
            continue
        cols = ""
        for p in protocols:
            verdict = str(by[p]["verdict"]) if p in by else NO_DATA
            cols += f"{verdict_mark(verdict)} {_short_verdict(verdict):<14}"
        out.append(f"{claim} {ds:<{wd}} {cols}{_short_name(first, SHORT_SWEEP)}".rstrip())
    return out


def checklist_verdicts(cmp: dict[str, Any]) -> list[str]:
    """The verdict each line of ``checklist_lines`` is coloured by: the item's, or with
    several protocols the common one ('' for the header and where the protocols differ)."""
    protocols = list(cmp.get("protocols") or [])
    out = [""] if protocols else []
    for _, by in _rows(cmp):
        words = {str(c["verdict"]).split(":", 1)[0] for c in by.values()}
        if protocols and (len(words) > 1 or len(by) < len(protocols)):
            out.append("")
        else:
            out.append(str(next(iter(by.values()))["verdict"]))
    return out


def _short_name(c: dict[str, Any], sweeps: dict[str, str] | None = None) -> str:
    """A claim's name in one line, with its sweep (shortened by ``sweeps`` when given)."""
    name = SHORT_CLAIM.get(int(c["claim"]), str(c["title"]).split(":", 1)[0])
    sweep = str(c.get("sweep") or "")
    return name + (f" ({(sweeps or {}).get(sweep, sweep)})" if sweep else "")


def _short_verdict(verdict: str) -> str:
    """``inconclusive: models not converged`` → ``inconclusive*`` (the details say why);
    ``no data: not run yet`` (a reproduction's part still to run) → ``not run yet``."""
    if verdict == f"{NO_DATA}: {NOT_RUN}":
        return NOT_RUN
    return verdict.split(":", 1)[0] + ("*" if ":" in verdict else "")


def checklist_details(cmp: dict[str, Any]) -> list[str]:
    """Per claim and data set (and protocol): ``1 mnist: TITLE. STATISTIC (VERDICT)``
    (wrapped by the printer at word boundaries)."""
    return [
        f"{c['claim']} {c.get('dataset', '')}"
        + (f" ({c['protocol']})" if c.get("protocol") else "")
        + f": {c['title']}"
        + (f" ({c['sweep']})" if c.get("sweep") and f"({c['sweep']})" not in c["title"] else "")
        + f". {c['statistic']} ({c['verdict']})"
        for c in cmp.get("checklist", [])
    ]


def checklist_rows(cmp: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """The checklist as table cells, one row per claim and data set: (mark, claim number,
    data set, verdict, short name); the same words as ``checklist_lines``."""
    out = []
    for c in cmp.get("checklist", []):
        verdict = str(c["verdict"])
        out.append(
            (
                verdict_mark(verdict),
                str(c["claim"]),
                str(c.get("dataset", "")) + (f" ({c['protocol']})" if c.get("protocol") else ""),
                _short_verdict(verdict),
                _short_name(c),
            )
        )
    return out


CLAIM_TAB = {
    1: "sweep",
    2: "spectra",
    3: "flips",
    4: "flips",
    5: "spectra",
    6: "landscape",
    7: "sweep",
}
"""The panel that shows a claim's numbers (5, the dual implication: the spectrum sub-run,
which measures the alignment beside the spectrum)."""
CLAIM_EXPERIMENTS = {
    1: ("ntk",),
    2: ("spectrum",),
    3: ("flip",),
    4: ("advtrain", "flip"),
    5: ("spectrum",),
    6: ("landscape",),
    7: ("ntk",),
}
"""The experiments whose sub-run holds a claim's cells, the first found wins."""


def claim_target(item: dict[str, Any], parts: list[dict[str, Any]]) -> tuple[str, str | None]:
    """(panel, sub-run key) behind one checklist item: the panel of its claim, and the
    reproduction's part (``reproduce.json``'s ``parts``) of the item's data set that ran the
    claim's experiment; for claim 1, the sweep the item names (``Adam, 10-class`` → the
    multiclass part, ``full-batch GD, binary`` → the GD part). None: no part holds it."""
    claim = int(item.get("claim", 0))
    tab = CLAIM_TAB.get(claim, "claims")
    sweep = str(item.get("sweep") or "")
    ds = str(item.get("dataset", ""))

    def runs(p: dict[str, Any], exp: str) -> bool:
        spec = p.get("spec")
        return isinstance(spec, dict) and exp in str(spec.get("experiment", "")).split(",")

    for exp in CLAIM_EXPERIMENTS.get(claim, ()):
        found = [p for p in parts if str(p.get("dataset", "")) == ds and runs(p, exp)]
        found.sort(
            key=lambda p: (
                (p.get("role") == "gd") != ("GD" in sweep),
                (p.get("task") == "binary") != ("binary" in sweep),
            )
        )
        if found:
            return tab, str(found[0]["key"])
    return tab, None
