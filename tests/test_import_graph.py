"""The import graph (docs/architecture.md#floors): no module of the engine or the TUI imports, even
lazily or for type checking, a module that imports it back (no circle); the floors
themselves are the ``layers`` contract that ``lint-imports`` checks."""

from __future__ import annotations

import grimp


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in edges:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges[w])))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_engine_or_the_tui() -> None:
    g = grimp.build_graph("engine", "malleability_tui")
    edges = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    assert _cycles(edges) == []


def _package_edges(g: grimp.ImportGraph, root: str) -> dict[str, set[str]]:
    """Imports between the parts of ``root`` one level down (its subpackages and modules:
    ``malleability_tui.widgets.x`` counts as ``malleability_tui.widgets``)."""

    def part(m: str) -> str:
        return ".".join(m.split(".")[:2])

    edges: dict[str, set[str]] = {part(m): set() for m in g.modules if m.startswith(root + ".")}
    for m in g.modules:
        if not m.startswith(root + "."):
            continue
        for d in g.find_modules_directly_imported_by(m):
            if d.startswith(root + ".") and part(d) != part(m):
                edges[part(m)].add(part(d))
    return edges


def test_no_import_circle_between_the_tui_subpackages() -> None:
    # widgets post messages; screens and the app act on them (a widget that pushed a
    # screen made widgets ↔ screens a circle)
    g = grimp.build_graph("malleability_tui")
    edges = _package_edges(g, "malleability_tui")
    assert {"malleability_tui.widgets", "malleability_tui.screens"} <= set(edges)
    assert _cycles(edges) == []
