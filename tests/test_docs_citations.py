"""The code cites the docs pages, never the specification files that are not in the tree.

``docs/tools/cite_docs.py`` rewrites such citations; these tests fail when a new one
appears (run the script) or when a docs anchor the script maps to disappears.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = re.compile(r"\b(?:PAPER|DESIGN)\.md\b")


def _cite_docs():
    spec = importlib.util.spec_from_file_location("cite_docs", ROOT / "docs/tools/cite_docs.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", "engine", "malleability_tui", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    me = Path(__file__).resolve()
    return [ROOT / p for p in out.split("\0") if p and (ROOT / p).resolve() != me]


def test_no_tracked_file_cites_the_specification_files():
    bad = []
    for path in _tracked():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        bad += [f"{path.relative_to(ROOT)}:{n}" for n, ln in enumerate(text.splitlines(), 1)
                if FORBIDDEN.search(ln)]  # fmt: skip
    assert not bad, f"cite docs pages instead (python docs/tools/cite_docs.py): {bad[:10]}"


def test_the_script_finds_the_old_citations_and_is_idempotent():
    cite = _cite_docs()
    old = 'NTK (PAPER.md §4, claim 1); flips (PAPER.md §6 and §6a); DESIGN.md "Layout"'
    new = cite.rewrite(old)
    assert new == (
        "NTK (docs/protocol.md#ntk, claim 1); flips (docs/protocol.md#influence and "
        "docs/protocol.md#evidence); docs/architecture.md#floors"
    )
    assert cite.rewrite(new) == new
    assert cite.rewrite("README 'Claims checklist'") == "docs/claims.md#rules"


def test_every_anchor_the_script_writes_exists():
    assert _cite_docs().check_targets() == []


def test_every_docs_link_in_the_code_names_an_existing_anchor():
    """A ``docs/PAGE.md#anchor`` in the code points at a heading of that page."""
    have = _cite_docs().anchors()
    link = re.compile(r"docs/([\w/-]+\.md)#([\w-]+)")
    bad = set()
    for path in _tracked():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for page, anchor in link.findall(text):
            if anchor not in have.get(f"docs/{page}", set()):
                bad.add(f"{path.relative_to(ROOT)}: docs/{page}#{anchor}")
    assert not bad, sorted(bad)
