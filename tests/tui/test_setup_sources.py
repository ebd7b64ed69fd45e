"""The setup form's "Own data" field: a source (npz:/folder:/hf:) typed, validated as you type."""

from __future__ import annotations

from pathlib import Path

from own_sources import write_all
from textual.widgets import Input, Label
from tui_support import make_test_app


def _error(app, key: str) -> str:
    lab = app.query_one(f"#err-{key}", Label)
    return str(lab.content) if lab.has_class("-show") else ""


async def _settle(pilot, app) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_own_data_is_read_and_checked_as_you_type(tmp_path: Path) -> None:
    name = write_all(tmp_path / "own", per_class=10)["folder"]
    app = make_test_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one("#setup-form")
        app.query_one("#f-classes", Input).value = "all"
        app.query_one("#f-n_train", Input).value = "12"
        app.query_one("#f-n_test", Input).value = "6"
        app.query_one("#f-source", Input).value = "zip:/x"
        await _settle(pilot, app)
        assert "npz:FILE, folder:DIR, hf:DIR" in _error(app, "dataset")
        app.query_one("#f-source", Input).value = name + "-missing"
        await _settle(pilot, app)
        assert "no such folder" in _error(app, "dataset")
        app.query_one("#f-source", Input).value = name
        await _settle(pilot, app)
        assert _error(app, "dataset") == "" and form.errors == {}
        spec, _ = form.validate()
        assert spec is not None and spec.data.name == name
        app.query_one("#f-n_train", Input).value = "60"  # 10 images a class, one split
        await _settle(pilot, app)
        assert "lower n_train" in _error(app, "n_train")
        form.spec = spec  # a loaded spec with a source shows it in the field
        await pilot.pause()
        assert app.query_one("#f-source", Input).value == name
