"""The typed TOML codec of the run spec: a dataclass from a TOML table, each field
checked against its own annotation (a field added to any section is covered without more
code), and the spec written back as TOML. Generic over dataclasses: the spec's sections
are passed in (``engine.run.spec.SECTIONS``)."""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import fields
from typing import Any

from engine.errors import ConfigError


def _to_plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _to_plain(x) for k, x in v.items() if x is not None}
    if isinstance(v, (list, tuple)):
        return [_to_plain(x) for x in v]
    return v


def _from_dict(cls: type, d: Any, prefix: str, sections: Mapping[str, type] | None = None) -> Any:
    """An instance of the dataclass ``cls`` from the TOML table ``d``, every field typed
    by its annotation; ``sections``: field name → the dataclass of a nested table."""
    sections = sections or {}
    if not isinstance(d, dict):
        raise ConfigError(prefix.rstrip(".") or "config", d, "a table of options")
    known = {f.name: f for f in fields(cls)}
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for k, v in d.items():
        if k not in known:
            raise ConfigError(prefix + k, v, f"a known option: {', '.join(sorted(known))}")
        if k in sections:
            kwargs[k] = _from_dict(sections[k], v, k + ".")
            continue
        ok, value, kind = _coerce(hints[k], v)
        if not ok:
            allowed = _probe_allowed(cls, k, v)
            default = getattr(cls(), k)
            example = f", e.g. {_toml_value(default)}" if default not in (None, ()) else ""
            raise ConfigError(
                prefix + k, v, f"{allowed} ({kind})" if allowed else f"{kind}{example}"
            )
        kwargs[k] = value
    try:
        return cls(**kwargs)
    except TypeError as e:  # pragma: no cover - defensive
        raise ConfigError(prefix.rstrip(".") or "config", d, str(e)) from None


# -- strict field typing ---------------------------------------------------------
# A spec file gives each field its own TOML type, read off the dataclass annotation, so
# a field added to any section is covered without more code: a bool is a TOML bool (no
# "false" strings), an int an integer, a float a number, a tuple a TOML array whose
# elements have the element type (a string is never a list of characters).

_KIND = {
    bool: "a TOML boolean (true or false)",
    int: "an integer",
    float: "a number",
    str: "a string",
}
_PLURAL = {bool: "booleans", int: "integers", float: "numbers", str: "strings"}


def _coerce(tp: Any, v: Any) -> tuple[bool, Any, str]:
    """(ok, value as the field stores it, what the type allows) for TOML value ``v``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if v is None:
            return True, None, ""
        results = [_coerce(a, v) for a in args]
        for r in results:
            if r[0]:
                return r
        return False, v, " or ".join(r[2] for r in results) + ", or leave it out"
    if origin is typing.Literal:  # a string (or number) of the field's own type: its
        return _coerce(type(typing.get_args(tp)[0]), v)  # validator names the values
    if origin is tuple:
        elem = typing.get_args(tp)[0]
        kind = f"a TOML array of {_PLURAL.get(elem, 'values')}"
        if not isinstance(v, (list, tuple)):
            return False, v, kind
        out = []
        for x in v:
            ok, xv, _ = _coerce(elem, x)
            if not ok:
                return False, v, kind
            out.append(xv)
        if len(set(out)) != len(out):  # every list option takes each value once
            return False, v, kind + ", each value once"
        return True, tuple(out), kind
    kind = _KIND.get(tp, "a value")
    if tp is bool:
        return isinstance(v, bool), v, kind
    if tp is int:
        return isinstance(v, int) and not isinstance(v, bool), v, kind
    if tp is float:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        return ok, float(v) if ok else v, kind
    if tp is str:
        return isinstance(v, str), v, kind
    return True, v, kind  # pragma: no cover - a field type the checker does not know


def _probe_allowed(cls: type, name: str, value: Any) -> str | None:
    """The field's own "allowed" text from its validator, when it has one for ``value``."""
    try:
        cls(**{name: value})
    except ConfigError as e:
        return e.allowed if e.field.split(".")[-1] == name else None
    except Exception:  # a validator that assumed the right type: fall back to the type
        return None
    return None


def _texts(d: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted field, text) for every string in a spec dict, lists included."""
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _texts(v, f"{prefix}{k}.")
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, str):
                yield f"{prefix}{k}", x


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (undecodable bytes of a file name)
        return False
    return True


def _toml_char(c: str) -> str:
    """One character of a TOML basic string: quotes, backslashes and control characters
    escaped (a raw ESC or NUL makes the file unreadable, and the run with it)."""
    if c in ('"', "\\"):
        return "\\" + c
    if ord(c) < 0x20 or ord(c) == 0x7F:
        return f"\\u{ord(c):04x}"
    return c


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return (
            repr(v)
            if not isinstance(v, float) or math.isfinite(v)
            else ("nan" if v != v else ("inf" if v > 0 else "-inf"))
        )
    if isinstance(v, str):
        return '"' + "".join(_toml_char(c) for c in v) + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def dumps_toml(d: dict[str, Any]) -> str:
    """Write a dict of scalars, lists and one level of tables as TOML."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in d.items() if not isinstance(v, dict)]
    for k, v in d.items():
        if isinstance(v, dict):
            lines.append("")
            lines.append(f"[{k}]")
            lines.extend(f"{kk} = {_toml_value(vv)}" for kk, vv in v.items())
    return "\n".join(lines) + "\n"
