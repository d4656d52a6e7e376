"""The hook and a running ``goat serve`` when the binding has an embedder (docs/design.md,
Agent-host hooks): the hook asks the server's owner-only local socket, so recall by meaning
happens where the model is already loaded; with no server (or one it must not trust: another
user's socket, one open to others, garbage, a huge or late reply) it recalls keyword-only in
its own process, says so on stderr and never loads the model."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from goat_core.contract import Scope
from goat_core.serve._local import socket_path

from .conftest import GOAT, ROOT, goat, goat_env, run_hook

pytestmark = pytest.mark.anyio

PROMPT = "my laptop versus my desktop"  # shares no word with the note: only meaning finds it
NOTES = {
    "Sync across devices.md": "# Sync across devices\n\nKeep a mobile and a computer in step.\n",
    "Phone tips.md": "# Phone tips\n\nThe phone app has a toolbar.\n",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _install_fake_embedder(site: Path) -> Path:
    """The fake embedder plugin the markdown tests use, as a real entry point in ``site``."""
    path = ROOT / "plugins" / "markdown" / "tests" / "_fake_embed_site.py"
    spec = importlib.util.spec_from_file_location("_fake_embed_site", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result: Path = module.install_fake_embedder(site)
    return result


@pytest.fixture
def bound(home: Path, tmp_path: Path) -> dict[str, str]:
    """Global bound to a vault with embedder ``fake``; the environment every goat process of
    the test runs with (the plugin on PYTHONPATH, model loads logged)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    for name, text in NOTES.items():
        (vault / name).write_text(text, encoding="utf-8")
    site = _install_fake_embedder(tmp_path / "site")
    env = goat_env(home, PYTHONPATH=str(site), GOAT_FAKE_EMBED_LOG=str(tmp_path / "loads.log"))
    goat(home, "bind", "--global", "markdown", "--set", f"root={vault}", "--set",
         "embedder=fake", env=env)  # fmt: skip
    return env


def _loads(tmp_path: Path) -> list[str]:
    log = tmp_path / "loads.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _hook(home: Path, tmp_path: Path, env: dict[str, str], prompt: str = PROMPT) -> tuple[str, str]:
    out, err, code = run_hook(
        home, {"prompt": prompt, "cwd": str(tmp_path)}, "--pin", "global", env=env
    )
    assert code == 0
    return out["hookSpecificOutput"]["additionalContext"], err


def _hook_by_meaning(home: Path, tmp_path: Path, env: dict[str, str]) -> tuple[str, str]:
    """Ask the hook until the server has embedded the store (it embeds in the background
    and answers meanwhile, degraded): the context and stderr of the first answer by meaning;
    the first answer must say the store is being embedded."""
    context, err = _hook(home, tmp_path, env)
    if "Sync across devices" in context:
        return context, err
    assert "(server): " in err and "is being embedded for semantic recall" in err, err
    deadline = time.monotonic() + 60
    while "Sync across devices" not in context and time.monotonic() < deadline:
        time.sleep(0.2)
        context, err = _hook(home, tmp_path, env)
    return context, err


def _path(home: Path) -> Path:
    path = socket_path(home / "data", Scope.global_())
    assert path is not None
    return path


async def test_the_hook_gets_semantic_recall_from_the_running_server(
    home: Path, tmp_path: Path, bound: dict[str, str]
) -> None:
    params = StdioServerParameters(command=GOAT, args=["serve", "--global"], env=bound)
    async with Client(params) as client:
        await client.list_tools()
        path = _path(home)
        for _ in range(100):  # the local socket starts with the server
            if path.exists():
                break
            await anyio.sleep(0.1)
        assert path.exists() and (path.stat().st_mode & 0o777) == 0o600
        context, err = await anyio.to_thread.run_sync(
            lambda: _hook_by_meaning(home, tmp_path, bound)
        )
        assert "Sync across devices" in context, err  # a hit by meaning alone
        assert "(server): ok" in err and "degraded" not in err
        assert len(_loads(tmp_path)) == 1  # the server loaded the model, once; the hook never
    assert not path.exists()  # the server removed its socket on the way out

    # no server now: keyword-only, in this process, saying so; still no model loaded here
    context, err = _hook(home, tmp_path, bound)
    assert context == ""  # the meaning-only note is not found by keywords
    assert (
        "(in-process, keyword-only): keyword-only recall, degraded: embedder 'fake' is set" in err
    )
    assert "no running `goat serve` of this scope" in err
    context, err = _hook(home, tmp_path, bound, "phone toolbar tips")
    assert "Phone tips" in context and "keyword-only recall, degraded" in err
    assert len(_loads(tmp_path)) == 1


def test_goat_serve_http_answers_the_hook_of_each_scope_it_serves(
    home: Path, tmp_path: Path, bound: dict[str, str]
) -> None:
    goat(home, "bind", "--pen", "alpha", "markdown", env=bound)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen(
        [GOAT, "serve", "--http", f"127.0.0.1:{port}", "--global", "--pen", "alpha"],
        env=bound,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        paths = [_path(home), socket_path(home / "data", Scope.pen("alpha"))]
        deadline = time.monotonic() + 30
        while not all(p is not None and p.exists() for p in paths):
            assert proc.poll() is None and time.monotonic() < deadline, "no local sockets"
            time.sleep(0.1)
        context, err = _hook_by_meaning(home, tmp_path, bound)
        assert "Sync across devices" in context and "(server): ok" in err, err
        assert len(_loads(tmp_path)) == 1
    finally:
        proc.terminate()
        proc.wait(10)
    assert not any(p is not None and p.exists() for p in paths)  # removed on the way out


def test_goat_serve_says_on_stderr_while_it_embeds_a_store(
    home: Path, tmp_path: Path, bound: dict[str, str]
) -> None:
    """A store's first semantic recall through a server embeds every note: the server says
    so on its stderr (start, quarters, done with the time), and stdout carries nothing."""
    for i in range(30):
        (tmp_path / "vault" / f"extra {i}.md").write_text(f"# Extra {i}\n\nItem {i}.\n", "utf-8")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    err_file, out_file = tmp_path / "serve.err", tmp_path / "serve.out"
    with err_file.open("wb") as err, out_file.open("wb") as out:
        proc = subprocess.Popen(
            [GOAT, "serve", "--http", f"127.0.0.1:{port}", "--global"],
            env=bound,
            stdout=out,
            stderr=err,
        )
    try:
        path = _path(home)
        deadline = time.monotonic() + 30
        while not path.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no local socket"
            time.sleep(0.1)
        context, hook_err = _hook_by_meaning(home, tmp_path, bound)
        assert "Sync across devices" in context, hook_err
    finally:
        proc.terminate()
        proc.wait(10)
    lines = [ln for ln in err_file.read_text("utf-8").splitlines() if ln.startswith("goat serve:")]
    assert lines[0].startswith("goat serve: http://127.0.0.1:"), lines  # where it listens
    assert lines[1].startswith("goat serve: embedding 32 notes for semantic recall"), lines
    assert lines[-1].startswith("goat serve: embedded 32 notes in "), lines
    assert "goat serve: embedding" not in out_file.read_text("utf-8")


def _impostor(path: Path, reply: Callable[[socket.socket], None]) -> Iterator[None]:
    """A listener on ``path`` answering every connection with ``reply``."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen(4)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.recv(65536)
                    reply(conn)
                except OSError:
                    pass

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        server.close()
        path.unlink(missing_ok=True)


def _evil(conn: socket.socket) -> None:
    block = "EVIL injected memory"
    conn.sendall(
        json.dumps({"scope": "global", "outcome": "ok", "block": block, "reason": None}).encode()
        + b"\n"
    )


def _garbage(conn: socket.socket) -> None:
    conn.sendall(b"this is not json at all\n")


def _huge(conn: socket.socket) -> None:
    chunk = b'{"scope": "global", "block": "' + b"EVIL " * 20_000
    for _ in range(400):  # up to 40 MB, never a newline
        conn.sendall(chunk)


def _silent(conn: socket.socket) -> None:
    threading.Event().wait(10)


@pytest.mark.parametrize(
    ("reply", "mode", "owner", "why"),
    [
        (_evil, 0o666, None, "PermissionError: "),
        (_evil, 0o600, 65534, "belongs to another user"),
        (_garbage, 0o600, None, "JSONDecodeError"),
        (_huge, 0o600, None, "the answer is over"),
        (_silent, 0o600, None, "did not answer in time"),
    ],
    ids=["open-to-others", "another-user", "garbage", "huge", "silent"],
)
def test_the_hook_fails_open_on_a_socket_it_must_not_trust(
    home: Path,
    tmp_path: Path,
    bound: dict[str, str],
    reply: Callable[[socket.socket], None],
    mode: int,
    owner: int | None,
    why: str,
) -> None:
    if owner is not None and os.getuid() != 0:
        pytest.skip("making a socket another user's needs root")
    path = _path(home)
    impostor = _impostor(path, reply)
    next(impostor)
    try:
        os.chmod(path, mode)
        if owner is not None:
            os.chown(path, owner, -1)
        context, err = _hook(home, tmp_path, bound, "phone toolbar tips")
    finally:
        impostor.close()
    assert "EVIL" not in context
    assert "Phone tips" in context  # the keyword-only recall of this process
    assert "keyword-only recall, degraded" in err and "the running server did not answer" in err
    assert why in err, err
    # a server is there: the hook never says to start one, and says why once
    assert "start one" not in err and err.count("the running server did not answer") == 1, err
    assert _loads(tmp_path) == []  # no model loaded anywhere


def test_a_stdio_server_stopped_by_sigterm_removes_its_socket(home: Path) -> None:
    proc = subprocess.Popen(
        [GOAT, "serve", "--global"],
        env=goat_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        path = _path(home)
        deadline = time.monotonic() + 30
        while not path.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no local socket"
            time.sleep(0.1)
        proc.terminate()
        assert proc.wait(10) == -signal.SIGTERM  # terminated, as SIGTERM does
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not path.exists()


def test_a_stale_socket_left_by_a_killed_server_falls_back_at_once(
    home: Path, tmp_path: Path, bound: dict[str, str]
) -> None:
    path = _path(home)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # bound, never listening, closed: what kill -9 leaves behind
    dead.close()
    os.chmod(path, 0o600)
    context, err = _hook(home, tmp_path, bound, "phone toolbar tips")
    assert "Phone tips" in context
    assert "the running server did not answer (ConnectionRefusedError" in err
    assert "keyword-only recall, degraded" in err and _loads(tmp_path) == []
