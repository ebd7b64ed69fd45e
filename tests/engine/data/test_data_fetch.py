"""fetch() against a local HTTP server: success, checksums, mirror fallback, safe tar extraction."""

from __future__ import annotations

import functools
import hashlib
import io
import socket
import tarfile
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engine.data import RemoteFile, load_dataset
from engine.data.fetch import fetch, safe_extract
from engine.errors import DatasetError

IDX_NAMES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)


class _Server:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[str] = []
        log = self.requests

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                log.append(self.path)
                super().do_GET()

        self.httpd = ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=str(root))
        )
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[_Server]:
    root = tmp_path / "www"
    root.mkdir()
    with _Server(root) as s:
        yield s


def _remote(path: Path, extract: bool = False) -> RemoteFile:
    data = path.read_bytes()
    return RemoteFile(
        path.name,
        md5=hashlib.md5(data).hexdigest(),
        sha256=hashlib.sha256(data).hexdigest(),
        extract=extract,
    )


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"  # nothing listens there any more: connection refused


def test_fetch_idx_set_then_load(tmp_path: Path, server: _Server, write_idx_set) -> None:
    write_idx_set(server.root / "mnist", train=30, test=20)
    files = [_remote(server.root / "mnist" / n) for n in IDX_NAMES]
    calls: list[tuple[int, int | None, str]] = []
    res = fetch(
        "mnist",
        tmp_path / "data",
        mirrors=[server.url + "mnist/"],
        files=files,
        progress=lambda *a: calls.append(a),
    )
    assert (
        res.path == tmp_path / "data" / "mnist"
        and res.downloaded == IDX_NAMES
        and res.skipped == ()
    )
    for n in IDX_NAMES:
        assert (res.path / n).read_bytes() == (server.root / "mnist" / n).read_bytes()
        last = [c for c in calls if c[2] == n][-1]
        assert last[0] == last[1] == (server.root / "mnist" / n).stat().st_size
    assert not list(res.path.glob(".*part"))
    ds = load_dataset("mnist", root=tmp_path / "data", n_train=10, n_test=10, seed=0)
    assert ds.notes == ()
    again = fetch("mnist", tmp_path / "data", mirrors=[server.url + "mnist/"], files=files)
    assert again.downloaded == () and again.skipped == IDX_NAMES


def test_checksum_mismatch_removes_partial_file(
    tmp_path: Path, server: _Server, write_idx_set
) -> None:
    write_idx_set(server.root, train=None, test=10)
    good = _remote(server.root / "t10k-labels-idx1-ubyte.gz")
    bad = RemoteFile(good.filename, md5="0" * 32)
    with pytest.raises(DatasetError) as e:
        fetch("mnist", tmp_path, mirrors=[server.url], files=[bad])
    msg = str(e.value)
    assert (
        "checksum mismatch: md5" in msg and f"expected {'0' * 32}" in msg and good.filename in msg
    )
    assert list((tmp_path / "mnist").iterdir()) == []  # neither the file nor a .part remains
    with pytest.raises(DatasetError, match="sha256"):
        fetch(
            "mnist",
            tmp_path,
            mirrors=[server.url],
            files=[RemoteFile(good.filename, md5=good.md5, sha256="f" * 64)],
        )


def test_failing_mirrors_fall_back_to_the_next(
    tmp_path: Path, server: _Server, write_idx_set
) -> None:
    write_idx_set(server.root / "ok", train=None, test=10)
    files = [_remote(server.root / "ok" / "t10k-labels-idx1-ubyte.gz")]
    res = fetch(
        "mnist",
        tmp_path,
        mirrors=[_closed_port_url(), server.url + "missing/", server.url + "ok"],
        files=files,
    )
    assert res.downloaded == ("t10k-labels-idx1-ubyte.gz",)
    assert server.requests == [
        "/missing/t10k-labels-idx1-ubyte.gz",
        "/ok/t10k-labels-idx1-ubyte.gz",
    ]
    with pytest.raises(DatasetError) as e:
        fetch(
            "fashion-mnist",
            tmp_path,
            mirrors=[_closed_port_url(), server.url + "missing/"],
            files=files,
        )
    assert "HTTP 404" in str(e.value) and "refused" in str(e.value).lower()


def test_fetch_cifar_tar_extracts_safely(tmp_path: Path, server: _Server, write_cifar) -> None:
    src = tmp_path / "src"
    write_cifar(src / "cifar-10-batches-py", {"data_batch_1": 20, "test_batch": 20})
    archive = server.root / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(src / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    res = fetch(
        "cifar10", tmp_path / "data", mirrors=[server.url], files=[_remote(archive, extract=True)]
    )
    assert res.path == tmp_path / "data" / "cifar10" / "cifar-10-batches-py"
    assert not (tmp_path / "data" / "cifar10" / "cifar-10-python.tar.gz").exists()
    ds = load_dataset(
        "cifar10", root=tmp_path / "data", classes=(0, 1), n_train=4, n_test=4, seed=0
    )
    assert ds.class_names == ("airplane", "automobile")


def _tar_with(path: Path, kind: str) -> str:
    """A tar.gz holding one good file and one malicious member; returns the bad member's name."""
    with tarfile.open(path, "w:gz") as tf:
        good = tarfile.TarInfo("cifar-10-batches-py/readme.txt")
        good.size = 2
        tf.addfile(good, io.BytesIO(b"hi"))
        bad = tarfile.TarInfo(
            {"abs": "/tmp/evil.txt", "dotdot": "cifar-10-batches-py/../../evil.txt"}.get(
                kind, "cifar-10-batches-py/evil"
            )
        )
        if kind in ("abs", "dotdot"):
            bad.size = 4
            tf.addfile(bad, io.BytesIO(b"evil"))
        else:
            bad.type = {
                "symlink": tarfile.SYMTYPE,
                "hardlink": tarfile.LNKTYPE,
                "device": tarfile.CHRTYPE,
                "fifo": tarfile.FIFOTYPE,
            }[kind]
            bad.linkname = "/etc/passwd" if kind in ("symlink", "hardlink") else ""
            tf.addfile(bad)
    return bad.name


@pytest.mark.parametrize(
    "kind,why",
    [
        ("abs", "absolute path"),
        ("dotdot", "'..'"),
        ("symlink", "link to '/etc/passwd'"),
        ("hardlink", "link to"),
        ("device", "device"),
        ("fifo", "FIFO"),
    ],
)
def test_safe_extract_rejects_malicious_members(tmp_path: Path, kind: str, why: str) -> None:
    archive = tmp_path / "evil.tar.gz"
    member = _tar_with(archive, kind)
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(DatasetError) as e:
        safe_extract(archive, dest)
    assert f"unsafe tar member {member!r}" in str(e.value) and why in str(e.value)
    assert list(dest.iterdir()) == []  # checked before anything is written
    assert not (tmp_path / "evil.txt").exists()


def test_fetch_rejects_a_malicious_archive(tmp_path: Path, server: _Server) -> None:
    archive = server.root / "cifar-10-python.tar.gz"
    _tar_with(archive, "dotdot")
    with pytest.raises(DatasetError, match="unsafe tar member"):
        fetch(
            "cifar10",
            tmp_path / "data",
            mirrors=[server.url],
            files=[_remote(archive, extract=True)],
        )
    assert list((tmp_path / "data" / "cifar10").iterdir()) == []  # archive removed too
    assert not (tmp_path / "evil.txt").exists()


def test_corrupt_archive_and_builtin(tmp_path: Path) -> None:
    p = tmp_path / "x.tar.gz"
    p.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(DatasetError, match="x.tar.gz"):
        safe_extract(p, tmp_path)
    assert "built in" in fetch("digits", tmp_path).note
