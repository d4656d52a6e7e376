"""A loopback fake of the Anthropic Messages API, for running the real Claude Code offline.

:class:`FakeAnthropic` serves ``POST /v1/messages`` (SSE when the body has ``"stream": true``,
plain JSON otherwise), ``POST /v1/messages/count_tokens`` and ``GET /v1/models``; any other
path gets a 404 error object. Every request is recorded (:attr:`FakeAnthropic.requests`) with
its arrival time. What the model says comes from a :data:`Script`: a function of the request
body returning the reply's content blocks.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]
Script = Callable[[dict[str, Any]], list[Block]]


@dataclass
class Recorded:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)

    @property
    def is_main(self) -> bool:
        """A main-loop model turn: a Messages request offering tools."""
        return (
            self.method == "POST"
            and self.path.split("?")[0] == "/v1/messages"
            and isinstance(self.body, dict)
            and bool(self.body.get("tools"))
        )


def text(value: str) -> Block:
    """A text content block."""
    return {"type": "text", "text": value}


def tool_use(name: str, arguments: dict[str, Any], block_id: str = "toolu_fake_1") -> Block:
    """A tool_use content block."""
    return {"type": "tool_use", "id": block_id, "name": name, "input": arguments}


def request_text(body: dict[str, Any]) -> str:
    """All text of a request body (system and messages), for substring assertions."""
    return json.dumps({"system": body.get("system"), "messages": body.get("messages")})


def tool_results(body: dict[str, Any]) -> list[Block]:
    """The tool_result blocks of a request's last user message."""
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return []
    content = messages[-1].get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def tool_names(body: dict[str, Any]) -> list[str]:
    """The names of the tools a request offers the model."""
    return [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]


def reply_text(value: str) -> Script:
    """A script that always answers ``value``."""
    return lambda _body: [text(value)]


def call_tool_then_text(suffix: str, arguments: dict[str, Any], done: str = "done") -> Script:
    """A script: the first main turn calls the offered tool whose name ends with ``suffix``;
    once a tool_result is in the request (or no such tool is offered), answer ``done``."""

    def script(body: dict[str, Any]) -> list[Block]:
        if not body.get("tools") or tool_results(body):
            return [text(done)]
        names = [n for n in tool_names(body) if n.endswith(suffix)]
        if not names:
            return [text(f"{done} (no tool ending in {suffix!r} was offered)")]
        return [tool_use(names[0], arguments)]

    return script


class FakeAnthropic:
    """A threaded HTTP server on 127.0.0.1 (free port) answering as the Messages API."""

    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = script or reply_text("ok")
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL for ``ANTHROPIC_BASE_URL``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeAnthropic:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def main_requests(self) -> list[Recorded]:
        """The recorded main-loop turns (Messages requests offering tools), in order."""
        with self._lock:
            return [r for r in self.requests if r.is_main]

    def describe(self, limit: int = 2000) -> str:
        """A readable summary of every recorded request, for assertion messages."""
        with self._lock:
            reqs = list(self.requests)
        lines = [f"{len(reqs)} request(s) to the fake API:"]
        for i, r in enumerate(reqs):
            body = r.body if isinstance(r.body, dict) else {}
            summary = {
                "model": body.get("model"),
                "stream": body.get("stream"),
                "tools": len(body.get("tools") or []),
                "messages": len(body.get("messages") or []),
            }
            lines.append(f"#{i} {r.method} {r.path} {json.dumps(summary)}")
            if body.get("messages"):
                last = json.dumps(body["messages"][-1])
                lines.append(f"    last message: {last[:limit]}")
        return "\n".join(lines)

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            blocks = self.script(body)
        except Exception as exc:  # a broken script must not hang Claude Code
            blocks = [text(f"fake script error: {exc!r}")]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return {
            "id": f"msg_fake_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _read_body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not raw:
                    return None
                try:
                    return json.loads(raw)
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", "req_fake")
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                body = self._read_body() if method == "POST" else None
                fake._record(Recorded(method, self.path, dict(self.headers), body))
                path = self.path.split("?")[0]
                if method == "POST" and path == "/v1/messages/count_tokens":
                    size = len(json.dumps(body)) if body is not None else 0
                    self._json(200, {"input_tokens": max(1, size // 4)})
                elif method == "POST" and path == "/v1/messages" and isinstance(body, dict):
                    message = fake._message(body)
                    if body.get("stream"):
                        self._stream(message)
                    else:
                        self._json(200, message)
                elif method == "GET" and path.startswith("/v1/models"):
                    self._json(
                        200, {"data": [], "has_more": False, "first_id": None, "last_id": None}
                    )
                else:
                    self._json(
                        404,
                        {
                            "type": "error",
                            "error": {
                                "type": "not_found_error",
                                "message": f"fake: no {method} {path}",
                            },
                        },
                    )

            def _stream(self, message: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.send_header("request-id", "req_fake")
                self.end_headers()
                self.close_connection = True
                start = {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                }
                self._event("message_start", {"type": "message_start", "message": start})
                for index, block in enumerate(message["content"]):
                    if block["type"] == "text":
                        first: Block = {"type": "text", "text": ""}
                        delta: Block = {"type": "text_delta", "text": block["text"]}
                    else:
                        first = {**block, "input": {}}
                        delta = {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        }
                    self._event(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": first},
                    )
                    self._event(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                    self._event(
                        "content_block_stop", {"type": "content_block_stop", "index": index}
                    )
                self._event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                        "usage": {"output_tokens": 5},
                    },
                )
                self._event("message_stop", {"type": "message_stop"})
                self.wfile.flush()

            def _event(self, name: str, data: dict[str, Any]) -> None:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

            def do_POST(self) -> None:
                self._route("POST")

            def do_GET(self) -> None:
                self._route("GET")

            def do_HEAD(self) -> None:
                fake._record(Recorded("HEAD", self.path, dict(self.headers), None))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler


def main() -> None:
    """Run the fake on a free port until interrupted (prints its URL); for manual use."""
    with FakeAnthropic(call_tool_then_text("recall", {"query": "sentinel"})) as fake:
        print(fake.url, flush=True)
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
