"""A loopback stand-in for a remote MCP memory server, hostile on request, for testing that a
provider's secrets never reach what users and models see (docs/design.md, Credentials and
egress: "any text that came from a server is redacted against the binding's secrets").

- :func:`remote_mcp_server` serves one mode on ``127.0.0.1`` in a thread and counts every
  request it gets:

  - ``"auth"``: every request is a 401 whose body quotes the ``Authorization`` header;
  - ``"down"``: every request is a 503;
  - ``"rpc"``: every JSON-RPC request is an error whose message quotes the header;
  - ``"tool"``: the MCP session starts (``initialize``, ``tools/list`` with the given tool
    names), then every tool call is an ``isError`` result quoting the header.

  Each quote holds the header value (``Bearer <key>``), the bare key and the key
  URL-encoded, so a redaction that misses one form is caught.
- :func:`secret_forms` lists those forms for a key; :func:`assert_no_secret` fails naming
  the form that leaked and where.

Usage, in a remote provider's tests::

    from goat_core.testing import assert_no_secret, remote_mcp_server

    def test_errors_never_carry_the_key(tmp_path):
        with remote_mcp_server("tool", tools=["retain", "recall"]) as server:
            ...  # bind to server.url with KEY, call every surface, collect the texts
        assert server.requests  # the server really was asked
        assert_no_secret(collected_text, KEY)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import quote

#: The modes :func:`remote_mcp_server` serves.
MODES = ("auth", "down", "rpc", "tool")

#: The protocol version the ``tool`` mode answers ``initialize`` with.
PROTOCOL_VERSION = "2025-11-25"


def secret_forms(key: str) -> list[str]:
    """What must never be shown for ``key``: the key, its ``Authorization`` header value,
    its URL-encoded forms (upper- and lower-case escapes), then its JSON-escaped and base64
    forms (``goat_core/logs.py``, :func:`~goat_core.logs.base64_forms`)."""
    from goat_core.logs import base64_forms

    encoded = quote(key, safe="")
    first = [key, f"Bearer {key}", encoded, encoded.lower()]
    more = {json.dumps(key)[1:-1], *base64_forms(key)} - set(first)
    return first + sorted(m for m in more if len(m) >= 8)


def assert_no_secret(text: str, *keys: str) -> None:
    """Fail if any :func:`secret_forms` of any of ``keys`` occurs in ``text``.

    :raises AssertionError: naming the leaked form and showing the text.
    """
    for key in keys:
        for form in secret_forms(key):
            assert form not in text, f"secret form {form!r} leaked in: {text}"


@dataclass
class RemoteServer:
    """A running :func:`remote_mcp_server`: its base ``url`` (no path; every path is served
    alike) and, in order, each request's JSON-RPC method (``GET``/``DELETE`` for those verbs,
    ``None`` for a body without a method)."""

    url: str
    mode: str
    requests: list[str | None] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    mode: ClassVar[str] = "tool"
    tools: ClassVar[tuple[str, ...]] = ()
    requests: ClassVar[list[str | None]] = []

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any, **headers: str) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _echo(self) -> str:
        auth = self.headers.get("authorization", "")
        key = auth.removeprefix("Bearer ")
        return f"refused request with Authorization: {auth} (key={quote(key, safe='')}) {key}"

    def do_GET(self) -> None:
        self.requests.append("GET")
        self._send(405, None)

    def do_DELETE(self) -> None:
        self.requests.append("DELETE")
        self._send(200, None)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        method = body.get("method")
        self.requests.append(method if isinstance(method, str) else None)
        if self.mode == "auth":
            return self._send(401, {"error": f"Invalid authentication token: {self._echo()}"})
        if self.mode == "down":
            return self._send(503, {"error": "maintenance"})
        if "id" not in body:  # a notification
            return self._send(202, None)
        rid = body["id"]
        if self.mode == "rpc":
            error = {"code": -32603, "message": self._echo()}
            return self._send(200, {"jsonrpc": "2.0", "id": rid, "error": error})
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            return self._send(
                200, {"jsonrpc": "2.0", "id": rid, "result": result}, **{"mcp-session-id": "s1"}
            )
        if method == "tools/list":
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in self.tools]
            return self._send(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        result = {"content": [{"type": "text", "text": self._echo()}], "isError": True}
        return self._send(200, {"jsonrpc": "2.0", "id": rid, "result": result})


@contextmanager
def remote_mcp_server(mode: str, *, tools: Sequence[str] = ()) -> Iterator[RemoteServer]:
    """Serve ``mode`` (one of :data:`MODES`) on a free loopback port until the block ends.

    :param tools: the tool names ``tools/list`` answers in the ``tool`` mode.
    :raises ValueError: for an unknown mode.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    requests: list[str | None] = []
    handler = type(
        "RemoteHandler", (_Handler,), {"mode": mode, "tools": tuple(tools), "requests": requests}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield RemoteServer(f"http://127.0.0.1:{server.server_address[1]}", mode, requests)
    finally:
        server.shutdown()
        server.server_close()
