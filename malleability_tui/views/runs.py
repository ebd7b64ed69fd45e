"""The run brief of the runs browser and the compare screen: key options, headline numbers (pure)."""

from __future__ import annotations

from typing import Any

from malleability_tui.spec_form import join_values
from malleability_tui.text import number as fmt


def spec_brief(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """Key options of a spec dict (as stored) for the runs browser / compare view."""
    d, m, t, f = (spec.get(k, {}) for k in ("data", "model", "train", "flip"))
    return [
        ("experiment", str(spec.get("experiment", "?"))),
        (
            "data set",
            f"{d.get('name', '?')} classes={join_values(d.get('classes'))} n={d.get('n_train', '?')}/{d.get('n_test', '?')}",
        ),
        ("models", join_values(m.get("kinds"))),
        ("widths", join_values(m.get("widths"))),
        ("seeds", join_values(spec.get("seeds"))),
        (
            "training",
            f"{t.get('optimizer', '?')} lr={t.get('lr', '?')} epochs={t.get('epochs', '?')}",
        ),
        ("attacks", f"{join_values(f.get('attacks'))} ε={join_values(f.get('eps'))}"),
        ("device", f"{spec.get('device', '?')} {spec.get('dtype', '')}"),
    ]


def headline_numbers(summary: dict[str, Any], limit: int = 8) -> list[str]:
    """Headline strings of a summary dict (sections' ``headline`` lists), else a few scalars."""
    out: list[str] = []
    for sec, data in summary.items():
        if not isinstance(data, dict):
            continue
        lines = data.get("headline")
        if lines:
            out.extend(f"{sec}: {ln}" for ln in ([lines] if isinstance(lines, str) else lines))
        else:
            for k, v in data.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    out.append(f"{sec}.{k} = {fmt(v)}")
                elif (
                    isinstance(v, dict)
                    and v
                    and all(isinstance(x, (int, float)) for x in v.values())
                ):
                    out.append(f"{sec}.{k}: " + ", ".join(f"{kk} {fmt(x)}" for kk, x in v.items()))
    return out[:limit]
