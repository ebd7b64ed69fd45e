"""Issue #29: a small seeded fuzzer over the run spec. Every field of every section gets
hostile values (bounds, wrong types, huge, nested, control characters); each spec is
either valid or refused with a one-line ``ConfigError``, never another exception. Valid
specs also survive a TOML round trip. Bounded: a fixed number of cases, well under a
second or two."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from engine.errors import ConfigError
from engine.run.spec import RunSpec

SEED = 29
PER_FIELD = 12


HOSTILE: list[Any] = [
    None,
    True,
    0,
    -1,
    1,
    2**31,
    2**63,
    2**200,
    -(2**63),
    0.0,
    -0.0,
    1e-320,
    1e300,
    -1e300,
    math.nan,
    math.inf,
    -math.inf,
    "",
    " ",
    "all",
    "x" * 10_000,
    "\x1b[31mred\x00",
    "bad\udcffutf8",
    "../../etc/passwd",
    "1e9",
    [],
    [0],
    [-1, -1],
    [2**40],
    [1e308, math.nan],
    ["a", 1, None],
    {},
    {"a": 1},
    [[[[[]]]]],
]


def _deep(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = [v]
    return v


def _fields(d: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for k, v in d.items():
        if isinstance(v, dict):
            out.extend(_fields(v, (*prefix, k)))
        else:
            out.append((*prefix, k))
    return out


def _set(d: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    import copy

    d = copy.deepcopy(d)
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return d


def _every_field() -> list[tuple[str, ...]]:
    """Every field of the spec and its sections (those a default leaves out too)."""
    import dataclasses

    def walk(cls: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        out = []
        for f in dataclasses.fields(cls):
            sub = f.default_factory if f.default_factory is not dataclasses.MISSING else None
            if sub is not None and dataclasses.is_dataclass(sub):
                out.extend(walk(sub, (*prefix, f.name)))
            else:
                out.append((*prefix, f.name))
        return out

    return walk(RunSpec, ())


def _check(d: dict[str, Any]) -> None:
    try:
        spec = RunSpec.from_dict(d)
    except ConfigError as e:
        line = str(e)
        assert "\n" not in line and len(line) < 600, line
        return
    except Exception as e:  # noqa: BLE001 - the assertion: no other exception
        pytest.fail(f"{type(e).__name__} for {str(d)[:300]}: {e}")
    text = spec.to_toml()
    text.encode("utf-8")  # spec.toml can be written
    assert RunSpec.from_toml(text) == spec


MEMORY_BUDGET = 64 * 2**20
"""Bytes the whole fuzz may hold at its peak: checking a spec never allocates what it asks for."""


def _peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def test_every_field_at_hostile_values() -> None:
    rng = random.Random(SEED)
    base = RunSpec().to_dict()
    fields = _every_field()
    assert len(fields) > 30  # the walk found the sections' fields
    before = _peak_rss()
    for path in fields:
        for value in rng.sample(HOSTILE, PER_FIELD) + [_deep(200)]:
            _check(_set(_with_sections(base, path), path, value))
    assert _peak_rss() - before < MEMORY_BUDGET  # the process's peak grew by less


def _with_sections(base: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    import copy

    d = copy.deepcopy(base)
    cur = d
    for k in path[:-1]:
        cur = cur.setdefault(k, {})
    return d


def test_random_combinations() -> None:
    rng = random.Random(SEED + 1)
    base = RunSpec().to_dict()
    fields = _every_field()
    for _ in range(300):
        d = _with_sections(base, ("x",))
        for path in rng.sample(fields, 3):
            d = _set(_with_sections(d, path), path, rng.choice(HOSTILE))
        _check(d)


@pytest.mark.parametrize(
    "top", [{"nosuch": 1}, {"model": 5}, {"model": {"nosuch": 1}}, {"model": []}, {"": None}]
)
def test_wrong_shapes(top: dict[str, Any]) -> None:
    _check(top)


def test_hostile_toml_text() -> None:
    for text in ("a = " + "[" * 5000 + "]" * 5000, "\ufeff[model]\nwidths = [8]", "x = 1e999"):
        try:
            RunSpec.from_toml(text)
        except ConfigError as e:
            assert "\n" not in str(e)
