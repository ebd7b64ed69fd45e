"""``malleability data list|fetch|show`` through typer's CliRunner."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from engine.data import DATASETS, RemoteFile
from engine.data.idx import write_idx
from malleability_tui.cli import data

runner = CliRunner()


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> typer.Typer:
    monkeypatch.delenv("MALLEABILITY_DATA", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(data, "console", Console(width=250))  # no wrapping of long paths
    app = typer.Typer()
    app.add_typer(data.app, name="data")
    return app


def _write_test_split(folder: Path, n: int = 20) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    write_idx(
        folder / "t10k-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    )
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", (np.arange(n) % 10).astype(np.uint8))


def test_list_shows_found_and_missing(cli: typer.Typer, tmp_path: Path) -> None:
    _write_test_split(tmp_path / "d" / "mnist")
    res = runner.invoke(cli, ["data", "list", "--data-dir", str(tmp_path / "d")])
    assert res.exit_code == 0, res.output
    out = res.output.splitlines()
    rows = {ln.split()[0]: ln for ln in out if ln.split() and ln.split()[0] in DATASETS}
    details = {n: " ".join(ln for ln in out if ln.startswith(f"{n}: ")) for n in DATASETS}
    assert set(rows) == set(DATASETS)
    assert "found" in rows["mnist"] and "test 20" in rows["mnist"]
    assert str(tmp_path / "d" / "mnist") in details["mnist"]
    assert (
        "not found" in rows["cifar10"] and "malleability data fetch cifar10" in details["cifar10"]
    )
    assert "built in" in rows["digits"] and "all 1,797" in rows["digits"]


def test_show_counts_classes(cli: typer.Typer, tmp_path: Path) -> None:
    _write_test_split(tmp_path / "m", n=30)
    res = runner.invoke(cli, ["data", "show", "mnist", "--data-dir", str(tmp_path / "m")])
    assert res.exit_code == 0, res.output
    assert "total" in res.output and "30" in res.output
    res = runner.invoke(cli, ["data", "show", "nope"])
    assert (
        res.exit_code == 1
        and "unknown data set 'nope'" in res.output
        and "Traceback" not in res.output
    )


def test_fetch_from_a_local_mirror(
    cli: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    www = tmp_path / "www"
    _write_test_split(www)
    files = tuple(
        RemoteFile(p.name, md5=hashlib.md5(p.read_bytes()).hexdigest())
        for p in sorted(www.iterdir())
    )
    monkeypatch.setitem(DATASETS, "mnist", dataclasses.replace(DATASETS["mnist"], remote=files))

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(www)))
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    ).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/"
        res = runner.invoke(
            cli, ["data", "fetch", "mnist", "--to", str(tmp_path / "d"), "--mirror", url]
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert res.exit_code == 0, res.output
    assert "2 file(s) downloaded" in res.output and str(tmp_path / "d" / "mnist") in res.output
    assert (tmp_path / "d" / "mnist" / "t10k-images-idx3-ubyte.gz").read_bytes() == (
        www / "t10k-images-idx3-ubyte.gz"
    ).read_bytes()


def test_fetch_errors_are_one_line(cli: typer.Typer, tmp_path: Path) -> None:
    res = runner.invoke(
        cli,
        [
            "data",
            "fetch",
            "mnist",
            "--to",
            str(tmp_path),
            "--mirror",
            "http://127.0.0.1:9/",
            "--timeout",
            "2",
        ],
    )
    assert (
        res.exit_code == 1 and "error: could not download train-images-idx3-ubyte.gz" in res.output
    )
    assert "Traceback" not in res.output
    res = runner.invoke(cli, ["data", "fetch", "digits"])
    assert res.exit_code == 0 and "built in" in res.output
