"""The third hostile battery (issue #42), specs, run stores, trackers and the environment:
each ends as a correct result or one line naming what was wrong and what is allowed,
never an internal error, a hang or a spec that says something other than what ran. (The
user's own data: ``test_third_battery_data``.)"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from reliability_support import TINY, invoke, one_line_failure

from engine.errors import ConfigError
from engine.run.spec import MAX_CONFIG_BYTES, MAX_NOTE_CHARS, DataSpec, RunSpec


def _within(seconds: float, *args: str, unblock: Path | None = None):
    """``invoke(*args)`` in a thread that must end within ``seconds`` (a hang fails the
    test, and the FIFO ``unblock`` is then opened for writing so the thread can end)."""
    box: list = []
    t = threading.Thread(target=lambda: box.append(invoke(*args)), daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive() and unblock is not None:
        os.close(os.open(unblock, os.O_WRONLY | os.O_NONBLOCK))
        t.join(5)
    assert box, f"{' '.join(map(str, args))}: still running after {seconds} s"
    return box[0]


# -- 3: a source option a built-in data set would ignore ------------------------------


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        (["--image-size", "4"], "--image-size 4"),
        (["--mode", "L"], "--mode 'L'"),
        (["--image-column", "img"], "--image-column 'img'"),
        (["--label-column", "fine"], "--label-column 'fine'"),
    ],
)
def test_a_source_option_for_a_built_in_is_refused(sandbox: Path, flags, field) -> None:
    res = invoke("headless", *TINY, *flags, "--out", sandbox / "run")
    line = one_line_failure(res)
    assert f"invalid {field}: set only for" in line and "digits is used as stored" in line
    assert not (sandbox / "run").exists()
    line = one_line_failure(invoke("data", "show", "digits", *flags))
    assert f"invalid {field}" in line and "used as stored" in line


def test_image_size_is_refused_for_npz_and_kept_where_a_source_reads_it(sandbox: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"data.image_size=8: set only for folder: and hf: sources"
    ):
        RunSpec(data=DataSpec(name="npz:/x.npz", image_size=8))  # npz arrays are used as stored
    spec = RunSpec(data=DataSpec(name="folder:/pics", image_size=8, mode="L"))
    assert RunSpec.from_toml(spec.to_toml()) == spec
    with_extra = RunSpec(
        data=DataSpec(image_size=8), spectrum=spec.spectrum.__class__(datasets=("hf:/d",))
    )
    assert with_extra.data.source_options().image_size == 8  # --datasets hf:/d reads it
    # a spec.toml that records an ignored size is refused when read, not run
    (sandbox / "old.toml").write_text('[data]\nname = "digits"\nimage_size = 4\n')
    line = one_line_failure(invoke("headless", "--config", sandbox / "old.toml", "--quiet"))
    assert "old.toml: invalid data.image_size=4" in line


# -- 10: a config that is not a small regular file ------------------------------------


def test_config_from_a_fifo_is_refused_without_blocking(sandbox: Path) -> None:
    fifo = sandbox / "spec.toml"
    os.mkfifo(fifo)
    res = _within(20, "headless", "--config", fifo, "--quiet", unblock=fifo)
    line = one_line_failure(res)
    assert f"invalid config='{fifo}': a regular TOML file of at most 1 MiB (this is a FIFO" in line


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_config_from_a_device_is_refused_before_reading(sandbox: Path, device: str) -> None:
    # /dev/zero was read without end (and then no SIGTERM was answered)
    line = one_line_failure(_within(20, "headless", "--config", device, "--quiet"))
    assert f"invalid config='{device}'" in line and "this is a character device" in line


def test_config_over_the_size_ceiling_is_refused(sandbox: Path) -> None:
    big = sandbox / "big.toml"
    big.write_text("# padding\n" * (MAX_CONFIG_BYTES // 10 + 1) + "[train]\nepochs = 2\n")
    line = one_line_failure(
        invoke("headless", "--config", big, "--save-config", sandbox / "o.toml")
    )
    assert "a regular TOML file of at most 1 MiB (this is larger than 1 MiB)" in line
    assert not (sandbox / "o.toml").exists()
    for special in ("dangling", "folder"):
        path = sandbox / special
        os.symlink(sandbox / "gone", path) if special == "dangling" else path.mkdir()
        line = one_line_failure(invoke("headless", "--config", path, "--quiet"))
        assert f"(this is a {special.replace('dangling', 'dangling symlink')}" in line, line


# -- 15: the note ---------------------------------------------------------------------


@pytest.mark.parametrize("char", ["\x1b", "\x07", "\x00", "\r", "\x9b", "\x7f"])
def test_control_characters_in_the_note_are_refused_and_never_echoed_raw(sandbox, char) -> None:
    (sandbox / "c.toml").write_text(f'note = "a{_toml_escape(char)}[2J"\n')
    res = invoke("headless", *TINY, "--config", sandbox / "c.toml", "--out", sandbox / "run")
    line = one_line_failure(res)
    assert "invalid note=" in line and "without control characters" in line
    assert char not in res.output and not (sandbox / "run").exists()


def _toml_escape(c: str) -> str:
    return f"\\u{ord(c):04x}"


def test_a_long_note_is_refused_in_one_short_line(sandbox: Path) -> None:
    (sandbox / "long.toml").write_text(f'note = "{"x" * (MAX_NOTE_CHARS + 1)}"\n')
    res = invoke("headless", *TINY, "--config", sandbox / "long.toml", "--quiet")
    line = one_line_failure(res)
    assert f"up to {MAX_NOTE_CHARS} characters" in line and len(line) < 400
    RunSpec(note="x" * MAX_NOTE_CHARS)  # the ceiling itself is fine


def test_a_stored_run_with_an_escape_in_its_note_is_listed_without_it(run_copy: Path) -> None:
    spec = run_copy / "spec.toml"
    text = spec.read_text()
    assert 'note = ""\n' in text
    spec.write_text(text.replace('note = ""', 'note = "\\u001b]0;pwned\\u0007\\u001b[2J"'))
    res = invoke("runs", "list")
    assert res.exit_code == 0 and "\x1b" not in res.output and "\x07" not in res.output
    assert "copy" in res.output and "damaged" in res.output
    res = invoke("runs", "show", run_copy)
    assert "\x1b" not in res.output and "invalid note=" in one_line_failure(res)


# -- 4 and 14: export ------------------------------------------------------------------


@pytest.mark.parametrize("to", ["./mlflow", "mlflow/", "{sandbox}/mlflow"])
def test_export_to_a_folder_named_mlflow_is_a_folder(run_copy: Path, sandbox: Path, to) -> None:
    before = (run_copy / "summary.json").read_bytes()
    res = invoke("export", run_copy, "--to", to.format(sandbox=sandbox))
    assert res.exit_code == 0, res.output
    assert (sandbox / "mlflow" / "train.csv").is_file() and "MLflow" not in res.output
    assert (run_copy / "summary.json").read_bytes() == before  # no run id written into it


def test_export_to_a_full_destination_names_the_destination(run_copy: Path, sandbox) -> None:
    """A file-size limit stands in for a full disk: train.csv (~260 B) fits, spec.toml
    (~1.6 KB) does not; the error was "RUN/spec.toml: ..." as if the run were broken."""
    import resource
    import subprocess
    import sys

    assert (run_copy / "train.csv").stat().st_size < 1024 < (run_copy / "spec.toml").stat().st_size
    dst = sandbox / "out"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "malleability_tui.cli.main",
            "export",
            str(run_copy),
            "--to",
            str(dst),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024)),
        timeout=120,
    )
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert f"{dst}/spec.toml: File too large" in lines[0], r.stderr
    assert str(run_copy) not in lines[0] and "internal error" not in lines[0]
    assert sorted(p.name for p in dst.iterdir()) == ["train.csv"]  # no temp file left


# -- 11: an MLflow server that does not answer ---------------------------------------


@pytest.fixture
def closed_port():
    """A local port bound but not listening: a connection to it is refused at once."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    yield s.getsockname()[1]
    s.close()


@pytest.mark.parametrize("scheme", ["http", "https", "postgresql+psycopg2"])
def test_an_unreachable_tracking_server_is_refused_before_the_run(
    sandbox: Path, closed_port: int, scheme: str
) -> None:
    uri = f"{scheme}://127.0.0.1:{closed_port}"
    out = sandbox / "run"
    res = _within(15, "headless", *TINY, "--track", "mlflow", "--tracking-uri", uri, "--out", out)
    line = one_line_failure(res)
    assert f"invalid tracking-uri='{uri}': a reachable MLflow tracking server" in line, line
    assert f"127.0.0.1:{closed_port}: Connection refused" in line and not out.exists()


def test_export_to_an_unreachable_server_is_refused(
    run_copy: Path, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = (run_copy / "summary.json").read_bytes()
    uri = f"http://127.0.0.1:{closed_port}/mlflow"
    line = one_line_failure(
        _within(15, "export", run_copy, "--to", "mlflow", "--tracking-uri", uri)
    )
    assert "a reachable MLflow tracking server" in line and "Connection refused" in line
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # the server named by the environment
    line = one_line_failure(_within(15, "export", run_copy, "--to", "mlflow"))
    assert f"invalid tracking-uri='{uri}'" in line and "Connection refused" in line
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:notaport")
    line = one_line_failure(_within(15, "export", run_copy, "--to", "mlflow"))
    assert "invalid tracking-uri='http://127.0.0.1:notaport': a tracking URI" in line
    assert (run_copy / "summary.json").read_bytes() == before


# -- 7, 8, 9, 16: names, the environment, memory, the working directory ---------------

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, limit=None):
    """The ``malleability`` command in a fresh process (what matplotlib, torch and the
    working directory are, is decided at process start)."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "malleability_tui.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        preexec_fn=limit,
        timeout=120,
    )


def test_a_run_folder_named_in_another_encoding_gets_its_report(good_run, sandbox) -> None:
    import shutil

    bad = sandbox / "runs" / os.fsdecode(b"caf\xe9")  # Latin-1 bytes: not UTF-8
    shutil.copytree(good_run, bad)
    for fmt in ("md", "html"):
        res = invoke("report", bad, "--format", fmt)
        assert res.exit_code == 0, res.output
        text = (bad / f"report.{fmt}").read_text(encoding="utf-8")
        assert "malleability report: caf\\xe9" in text
    res = invoke("export", bad, "--format", "json", "--to", sandbox / "ej")
    assert res.exit_code == 0, res.output
    res = invoke("runs", "list")
    assert res.exit_code == 0 and "caf" in res.output


def test_figures_of_a_run_folder_named_in_another_encoding(good_run, sandbox) -> None:
    pytest.importorskip("matplotlib")
    import shutil

    bad = sandbox / os.fsdecode(b"caf\xe9")
    shutil.copytree(good_run, bad)
    res = invoke("figures", bad, "--to", sandbox / "figs")
    assert res.exit_code == 0, res.output
    assert [p.name for p in (sandbox / "figs").glob("*_train_curves.png")] == [
        "caf\\xe9_train_curves.png"  # the label as the title spells it
    ]


@pytest.mark.parametrize("backend", ["nonsense", "qtagg"])
def test_figures_use_a_file_backend_whatever_mplbackend_says(good_run, tmp_path, backend) -> None:
    pytest.importorskip("matplotlib")
    r = _cli("figures", good_run, "--to", tmp_path / "figs", env={"MPLBACKEND": backend})
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert (tmp_path / "figs" / "run_train_curves.png").stat().st_size > 1000


def test_torch_that_cannot_load_is_one_line(tmp_path: Path) -> None:
    """Under a 400 MB address-space limit PyTorch's shared library cannot be mapped."""
    import resource

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))

    r = _cli("headless", *TINY, "--out", tmp_path / "run", limit=low)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert lines[0].startswith("error: cannot load PyTorch: ") and "ulimit -v" in lines[0]
    r = _cli("data", "show", "digits", limit=low)  # scikit-learn's library, first
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    # where the limit bites varies with the address space's layout: a library that cannot
    # be mapped, or an allocation that fails first; either way one line, no traceback
    assert lines[0].startswith(("error: cannot load ", "error: out of memory")), lines[0]
    assert "internal error" not in lines[0]


def test_a_deleted_working_directory_is_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    for cmd in (
        f"{sys.executable} -m malleability_tui.cli.main headless --quiet --out {tmp_path / 'r'}",
        f"{sys.executable} -c 'from malleability_tui.launch import main; main()'",
    ):
        r = subprocess.run(
            ["bash", "-c", f"cd {gone} && rmdir {gone} && exec {cmd}"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=120,
        )
        assert r.returncode != 0 and r.stderr.strip().splitlines() == [
            "error: the working directory no longer exists: cd to an existing folder and "
            "run it again"
        ], r.stderr
        gone.mkdir()
    assert not (tmp_path / "r").exists()
