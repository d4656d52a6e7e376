"""A hostile Hindsight server on loopback that echoes the request's ``Authorization`` header
(and the key URL-encoded) into its error text: the key, its whole header value and its
URL-encoded form never reach ``goat status`` (text and ``--json``), ``goat check`` (the saved
key and a draft's), the one-line error, an exception's ``str``/``repr``, ``Health.reason``, a
binding status reason or a tool result (docs/design.md, Credentials and egress)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from goat_core.contract import Scope
from goat_core.errors import GoatError
from goat_core.host import MemoryHost

from goat_hindsight.client import REQUIRED_TOOLS

#: A stored key and a draft key with characters that change when URL-encoded.
STORED_KEY = "hs-stored/Key+9=zQ!x7"
DRAFT_KEY = "hs-draft/Key+4=wR!y2"


def forms(key: str) -> list[str]:
    """What must never be shown: the key, its header value, its URL-encoded forms."""
    return [key, f"Bearer {key}", quote(key, safe=""), quote(key, safe="").lower()]


class Hostile(BaseHTTPRequestHandler):
    """``mode`` ``rpc``: every request is a JSON-RPC error quoting the header. ``tool``: the
    session starts, then every tool call is an ``isError`` result quoting it."""

    mode = "rpc"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: dict[str, Any] | None, **headers: str) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(405, None)

    def do_DELETE(self) -> None:
        self._send(200, None)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        auth = self.headers.get("authorization", "")
        key = auth.removeprefix("Bearer ")
        echo = f"refused request with Authorization: {auth} (key={quote(key, safe='')}) {key}"
        if "id" not in body:
            return self._send(202, None)
        rid, method = body["id"], body["method"]
        if self.mode == "rpc":
            return self._send(
                200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": echo}}
            )
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            return self._send(
                200, {"jsonrpc": "2.0", "id": rid, "result": result}, **{"mcp-session-id": "s1"}
            )
        if method == "tools/list":
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in REQUIRED_TOOLS]
            return self._send(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        result = {"content": [{"type": "text", "text": echo}], "isError": True}
        return self._send(200, {"jsonrpc": "2.0", "id": rid, "result": result})


@pytest.fixture(params=["rpc", "tool"])
def hostile(request: pytest.FixtureRequest) -> Iterator[str]:
    handler = type("HostileHandler", (Hostile,), {"mode": request.param})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GOAT_", "PYTHON_KEYRING")) and k != "HS_MCP_TOKEN"
    }
    env.update(GOAT_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    return env


def goat(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "goat_core.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=120,
    )


def assert_clean(text: str, *keys: str) -> None:
    for key in keys:
        for form in forms(key):
            assert form not in text, f"{form!r} leaked in: {text}"


def test_a_server_echoing_the_key_never_gets_it_shown(hostile: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    bound = goat(
        home,
        "bind",
        "--pen",
        "team",
        "hindsight",
        "--set",
        f"base_url={hostile}",
        "--set",
        "bank_id=team",
        "--api-key-stdin",
        "--no-connect",
        stdin=STORED_KEY,
    )
    assert bound.returncode == 0, bound.stderr
    runs = {
        "status": goat(home, "status"),
        "status --json": goat(home, "status", "--json"),
        "check": goat(home, "check", "--pen", "team"),
        "check --json": goat(home, "check", "--pen", "team", "--json"),
        "check draft": goat(
            home,
            "check",
            "--pen",
            "team",
            "--set",
            "bank_id=other",
            "--api-key-stdin",
            "--json",
            stdin=DRAFT_KEY,
        ),
        "recall": goat(home, "recall", "x", "--pen", "team"),
    }
    for name, run in runs.items():
        assert_clean(run.stdout + run.stderr, STORED_KEY, DRAFT_KEY)
        assert "REDACTED" in run.stdout + run.stderr or name.startswith("status"), name
    assert runs["recall"].returncode in (5, 6)
    assert runs["recall"].stderr.count("goat: error:") == 1
    assert runs["check"].returncode != 0 and runs["check draft"].returncode != 0
    assert json.loads(runs["check draft"].stdout)["ok"] is False


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_errors_health_status_and_tools_never_carry_the_key(
    hostile: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("GOAT_HOME", str(tmp_path / "home"))
    scope = Scope.pen("team")
    async with MemoryHost() as host:
        await host.bind(
            scope,
            "hindsight",
            {"base_url": hostile, "bank_id": "team"},
            api_key=STORED_KEY,
            connect=False,
        )
        memory = host.context_for(_chat("team"))
        seen: list[Any] = []
        try:
            await memory.recall("x")
        except GoatError as exc:
            seen += [str(exc), repr(exc), exc.message, exc.details, exc.args]
        else:
            pytest.fail("a hostile server answered a recall")
        health = await host.check(scope)
        draft = await host.check(
            scope, draft={"base_url": hostile, "bank_id": "other"}, api_key=DRAFT_KEY
        )
        seen += [health.reason, repr(health), draft.reason, repr(draft)]
        rows = await host.refresh()
        seen += [r.reason for r in rows] + [json.dumps(r.to_json(), default=str) for r in rows]
        result = await memory.tools().call("recall", {"query": "x"})
        seen.append(json.dumps(result, default=str))
        turn = await host.prepare_turn(_chat("team"), "what do we ship on thursdays?", budget=500)
        seen += [turn.reason, repr(turn)]
    assert not health.ok and not draft.ok
    text = "\n".join(str(s) for s in seen)
    assert_clean(text, STORED_KEY, DRAFT_KEY)
    assert "[REDACTED]" in text


def _chat(pen: str) -> Any:
    from goat_core.host import Chat

    return Chat(project_id=pen)
