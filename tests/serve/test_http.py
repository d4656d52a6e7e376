"""``goat serve --http``: one endpoint per scope named at start, session ids bound to their
endpoint, a token required off loopback, foreign Origins and oversized requests refused."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .conftest import GOAT, goat, goat_env

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(home: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    port = _free_port()
    proc = subprocess.Popen(
        [GOAT, "serve", "--http", *[a.replace("PORT", str(port)) for a in args]],
        env=goat_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read() if proc.stderr else "exited")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("goat serve --http did not start")


@pytest.fixture
def server(home: Path) -> Iterator[str]:
    goat(home, "bind", "--pen", "alpha", "markdown")
    proc, port = _start(home, "127.0.0.1:PORT", "--global", "--pen", "alpha")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


async def test_each_scope_has_its_own_endpoint(server: str) -> None:
    async with Client(f"{server}/mcp/pen/alpha", mode="legacy") as client:
        r = await client.call_tool("remember", {"text": "http alpha lynx"})
        assert r.structured_content["scope"] == "pen:alpha"
    async with Client(f"{server}/mcp/global", mode="legacy") as client:
        r = await client.call_tool("recall", {"query": "lynx"})
        assert r.structured_content["scope"] == "global" and r.structured_content["items"] == []
    async with httpx2.AsyncClient() as http:
        for path in ("/mcp/pen/beta", "/mcp", "/", "/mcp/pen"):
            r = await http.post(server + path, json=INIT, headers=HEADERS)
            assert r.status_code == 404, path


async def test_a_session_id_works_only_on_its_endpoint(server: str) -> None:
    async with httpx2.AsyncClient() as http:
        r = await http.post(f"{server}/mcp/pen/alpha", json=INIT, headers=HEADERS)
        assert r.status_code == 200
        sid = r.headers["mcp-session-id"]
        headers = {**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        other = await http.post(f"{server}/mcp/global", json=ping, headers=headers)
        assert other.status_code == 404
        own = await http.post(f"{server}/mcp/pen/alpha", json=ping, headers=headers)
        assert own.status_code == 200


async def test_origin_host_and_size_are_checked(server: str) -> None:
    async with httpx2.AsyncClient() as http:
        r = await http.post(
            f"{server}/mcp/global", json=INIT, headers={**HEADERS, "origin": "https://evil.example"}
        )
        assert r.status_code == 403
        r = await http.post(
            f"{server}/mcp/global", json=INIT, headers={**HEADERS, "host": "evil.example"}
        )
        assert r.status_code == 421
        big = {**INIT, "params": {**INIT["params"], "pad": "x" * 1_100_000}}
        r = await http.post(f"{server}/mcp/global", json=big, headers=HEADERS)
        assert r.status_code == 413


def test_off_loopback_needs_a_token_from_a_file_not_a_flag(home: Path, tmp_path: Path) -> None:
    refused = goat(home, "serve", "--http", "0.0.0.0:0", "--global", check=False)
    assert refused.returncode != 0 and "bearer token is required" in refused.stderr
    loose = tmp_path / "token"
    loose.write_text("a-token-of-enough-length-0123456789\n")
    os.chmod(loose, 0o644)
    refused = goat(
        home, "serve", "--http", "0.0.0.0:0", "--global", "--token-file", str(loose), check=False
    )
    assert refused.returncode != 0 and "chmod 600" in refused.stderr
    assert "a-token-of-enough-length" not in refused.stderr


async def test_a_token_is_required_when_given(home: Path, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token-value-0123456789\n")
    os.chmod(token, 0o600)
    proc, port = _start(home, "127.0.0.1:PORT", "--global", "--token-file", str(token))
    try:
        url = f"http://127.0.0.1:{port}/mcp/global"
        async with httpx2.AsyncClient() as http:
            assert (await http.post(url, json=INIT, headers=HEADERS)).status_code == 401
            bad = {**HEADERS, "authorization": "Bearer wrong"}
            assert (await http.post(url, json=INIT, headers=bad)).status_code == 401
        good = httpx2.AsyncClient(headers={"authorization": "Bearer s3cret-token-value-0123456789"})
        async with good, Client(streamable_http_client(url, http_client=good), mode="legacy") as c:
            assert "recall" in [t.name for t in (await c.list_tools()).tools]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "s3cret-token-value" not in err
    await anyio.sleep(0)
