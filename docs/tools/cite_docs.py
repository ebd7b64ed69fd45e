"""Rewrite citations of the specification files and of README sections as docs pages.

    python docs/tools/cite_docs.py            # rewrite in place (then ruff format), print what changed
    python docs/tools/cite_docs.py --check    # change nothing; exit 1 if anything would

The code used to cite ``PAPER.md §4``, ``DESIGN.md "Layout"`` and ``README "Scale out"``;
none of those sections is in the repository any more (the first two never were), so each
becomes the docs page and anchor that now holds it: ``docs/protocol.md#ntk``,
``docs/architecture.md#floors``, ``docs/guide.md#ray``. Idempotent: a second run finds
nothing, so it can be run again after other branches merge. It touches only git-tracked
files under engine/, malleability_tui/, tests/, benchmarks/ and sample_data/, and only the
citation text itself. Every anchor it writes is checked against the docs pages' headings
(``{ #anchor }``) before anything is written.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("engine", "malleability_tui", "tests", "benchmarks", "sample_data")
SELF = "docs/tools/cite_docs.py"
SKIP = {"tests/test_docs_citations.py"}  # it names the patterns it forbids

P = "docs/protocol.md"
C = "docs/claims.md"
SECTION = {  # PAPER.md § → page#anchor
    "1": C,
    "2": f"{P}#models",
    "3": f"{P}#training",
    "4": f"{P}#ntk",
    "5": f"{P}#spectra",
    "6": f"{P}#influence",
    "6a": f"{P}#evidence",
    "7": f"{P}#landscape",
    "8": f"{P}#defaults",
}
README = {  # README section title → page#anchor
    "Claims checklist": f"{C}#rules",
    "Guards": f"{C}#guards",
    "Guards: converged, above chance": f"{C}#guards",
    "Scale out": "docs/guide.md#ray",
    "Tracking": "docs/guide.md#mlflow",
    "Your own data": "docs/guide.md#own-data",
    "Data sets": "docs/guide.md#data-sets",
    "Experiments": "docs/guide.md#experiments",
    "Command reference": "docs/guide.md#commands",
    "The TUI": "docs/guide.md#tui",
    "Run directory": "docs/architecture.md#run-directory",
    "Layout: the floors": "docs/architecture.md#floors",
    "Python API": "docs/api.md",
    "Defaults vs the paper": f"{P}#defaults",
    "Trainability vs κ": f"{P}#trainability",
    "Presets": "docs/benchmarks.md#quick-preset",
    "Benchmarks": "docs/benchmarks.md",
    "Batched training": "docs/benchmarks.md#batched",
    "Results on the shared data": "docs/benchmarks.md#results-log",
    "Verdicts on trained models": "docs/benchmarks.md#verdicts",
    "Non-convergence (claim 1)": "docs/benchmarks.md#claim-1-runs",
    "Reliability: what is guaranteed": "docs/reliability.md#guarantees",
}

_ITEM = r"§?(\d+a?)(?:\.(\d))?(?: (preprocessing)| claim (\d))?|Tables? \d(?:–\d)?"
_PAPER = re.compile(
    rf"PAPER\.md(?:, last bullet)?(?P<rest>(?:(?:,|;| and)? ?(?:{_ITEM}))*)"
    r"(?P<last>, last bullet)?"
)
_ONE = re.compile(_ITEM)
_DESIGN = re.compile(
    r'DESIGN\.md(?P<what> "Layout"| columns| column names)?(?:,\s+README "Run directory")?'
)
_README = re.compile(
    r"""README(?:'s)? (?P<q>["'])(?P<title>[^"'\n]+)(?P=q)|README \((?P<q2>["'])(?P<t2>[^"'\n]+)(?P=q2)\)"""
)


def _item(m: re.Match[str]) -> str:
    if m.group(0).startswith("Table"):
        return f"{P}#paper-numbers"  # Table 1, Tables 2–4: the paper's reported numbers
    sec, sub, pre, claim = m.groups()
    if claim:  # "§2 claim 2" named the paper's claim, whatever the section
        return f"{C}#claim-{claim}"
    if sec == "1" and sub:
        return f"{C}#claim-{sub}"
    if pre:
        return f"{P}#preprocessing"
    return SECTION[sec]


def _paper(m: re.Match[str]) -> str:
    rest = m.group("rest") or ""
    if m.group(0).startswith("PAPER.md, last bullet") or m.group("last"):
        return f"{P}#qkv" + rest.replace("§2", "", 1).strip(" ,")
    if not rest.strip():
        return P
    return _ONE.sub(_item, rest).lstrip()


def _design(m: re.Match[str]) -> str:
    what = m.group("what") or ""
    if what == ' "Layout"':
        return "docs/architecture.md#floors"
    return "docs/architecture.md#run-directory" + ("" if not what else what)


def _readme(m: re.Match[str]) -> str:
    title = m.group("title") or m.group("t2")
    target = README.get(title)
    if target is None:  # a README section this script does not know: left alone, reported
        _unknown.add(title)
        return m.group(0)
    return target


_unknown: set[str] = set()


def rewrite(text: str) -> str:
    """``text`` with every citation rewritten (unchanged when there is none)."""
    text = _PAPER.sub(_paper, text)
    text = _DESIGN.sub(_design, text)
    return _README.sub(_readme, text)


def anchors() -> dict[str, set[str]]:
    """Each docs page (repo-relative) → the explicit anchors of its headings."""
    out: dict[str, set[str]] = {}
    for page in (ROOT / "docs").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        out[page.relative_to(ROOT).as_posix()] = set(re.findall(r"\{ ?#([\w-]+) ?\}", text))
    return out


def check_targets() -> list[str]:
    """Targets of the mappings whose page or anchor is missing."""
    have = anchors()
    targets = set(SECTION.values()) | set(README.values()) | {f"{P}#preprocessing", f"{P}#qkv"}
    targets |= {f"{P}#paper-numbers", "docs/architecture.md#floors"}
    targets |= {f"{C}#claim-{n}" for n in range(1, 8)} | {"docs/architecture.md#run-directory"}
    bad = []
    for t in sorted(targets):
        page, _, anchor = t.partition("#")
        if page not in have or (anchor and anchor not in have[page]):
            bad.append(t)
    return bad


def tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", *FOLDERS], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [ROOT / p for p in out.split("\0") if p and p != SELF and p not in SKIP]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 on a change")
    a = ap.parse_args()
    if bad := check_targets():
        print(f"missing docs anchors: {', '.join(bad)}", file=sys.stderr)
        return 2
    changed: list[Path] = []
    for path in tracked():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        new = rewrite(text)
        if new != text:
            changed.append(path)
            print(path.relative_to(ROOT))
            if not a.check:
                path.write_text(new, encoding="utf-8")
    for title in sorted(_unknown):
        print(f"left alone (no docs page known): README {title!r}", file=sys.stderr)
    print(f"{len(changed)} files {'would change' if a.check else 'changed'}", file=sys.stderr)
    if changed and not a.check:
        reformat([p for p in changed if p.suffix == ".py"])
    return 1 if a.check and changed else 0


def reformat(paths: list[Path]) -> None:
    """``ruff format`` the rewritten modules: a shorter string may now fit on one line, and
    CI checks the format. Skipped, with a line, where ruff is not installed."""
    import shutil

    ruff = shutil.which("ruff")
    if ruff is None:
        print("ruff not found: run `ruff format` on the files above", file=sys.stderr)
        return
    if paths:
        subprocess.run([ruff, "format", "-q", *map(str, paths)], cwd=ROOT, check=False)


if __name__ == "__main__":
    raise SystemExit(main())
