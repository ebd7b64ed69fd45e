"""Helpers for the data-source tests: the README's fixture script, loaded as a module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "sample_data" / "make_own_data.py"


def fixtures() -> ModuleType:
    """``sample_data/make_own_data.py`` (make_images, write_npz, write_folder, write_hf)."""
    spec = importlib.util.spec_from_file_location("make_own_data", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def needs_pyarrow() -> None:
    """Skip (with the reason) when pyarrow, which hf: sources need, is not installed."""
    pytest.importorskip("pyarrow", reason="hf: sources need pyarrow (the [hf] extra)")


def write_all(root: Path, per_class: int = 40) -> dict[str, str]:
    """The three sources of the same images under ``root``: kind → source name."""
    m = fixtures()
    root.mkdir(parents=True, exist_ok=True)
    x, y = m.make_images(per_class)
    out = {
        "npz": f"npz:{m.write_npz(root / 'shapes.npz', x, y)}",
        "folder": f"folder:{m.write_folder(root / 'shapes', x, y)}",
    }
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return out
    out["hf"] = f"hf:{m.write_hf(root / 'shapes_hf', x, y)}"
    return out
