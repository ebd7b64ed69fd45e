"""The HTML report renders its images in a real browser (headless Chromium): every
``<img>`` of ``malleability report RUN --format html`` loads with a width. Skips where no
Chromium is installed (``apt-get install chromium``)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from malleability_tui.cli.main import app

pytest.importorskip("matplotlib")

RUN = Path(__file__).resolve().parent / "golden" / "runs" / "20261203-193100-ntk-digits"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
PROBE = (
    "<img src='figures/no-such-figure.png' alt='control'>"
    "<script>window.addEventListener('load', () => document.body.setAttribute("
    "'data-images', JSON.stringify(Array.from(document.images, "
    "i => [i.getAttribute('src'), i.complete ? i.naturalWidth : -1]))));</script>"
)
"""Appended to a copy of the report: on load, each image's source and rendered width (0:
it did not load) into the DOM, which ``--dump-dom`` prints; a missing image is the
control that the probe sees a failure."""


def _browser() -> str | None:
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


@pytest.mark.skipif(
    _browser() is None, reason="no Chromium here (apt-get install chromium) to open the report in"
)
def test_the_html_report_renders_its_images_in_a_browser(tmp_path: Path) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    runner = CliRunner()
    for argv in (["figures", str(run)], ["report", str(run), "--format", "html"]):
        res = runner.invoke(app, argv)
        assert res.exit_code == 0, res.output
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "<img" in page
    probe = run / "probe.html"  # beside the report: the same relative image paths
    probe.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    browser = _browser()
    assert browser is not None
    out = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
         "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    m = re.search(r'data-images="([^"]*)"', out.stdout)
    assert m, f"the page did not load: {out.stderr[-1000:]}"
    widths = dict(json.loads(html.unescape(m.group(1))))
    assert widths.pop("figures/no-such-figure.png") == 0  # the probe sees a broken image
    assert widths and all(w > 0 for w in widths.values()), widths
