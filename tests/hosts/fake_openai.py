"""A loopback fake of the OpenAI Responses API, enough for a real Codex CLI to run one task.

Codex (0.171.0) with a custom ``[model_providers.X]`` of ``wire_api = "responses"`` posts each
turn to ``{base_url}/responses`` and reads a Server-Sent-Events stream of Responses API events
(``response.created``, ``response.output_item.done``, ``response.completed``). It may also ask
``GET {base_url}/models``; the fake answers that with an empty list.

The script is fixed: while no ``function_call_output`` is in the request's ``input``, answer with
one ``function_call`` to the advertised tool whose name ends in ``tool_suffix`` (``recall``),
arguments ``{"query": query}``; once the output is there, answer with a plain assistant message.
Every request is recorded (method, path, headers, parsed JSON body) for the test to inspect.

Run it alone for a manual try: ``python tests/hosts/fake_openai.py`` prints its base URL.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_TEXT = "GOAT answered; done."


@dataclass
class Recorded:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Script:
    """What the fake answers: the tool to call, with which query, and the final text."""

    tool_suffix: str = "recall"
    server_hint: str = "goat"
    query: str = "sentinel"
    final_text: str = FINAL_TEXT


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def _usage() -> dict[str, Any]:
    return {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }


def iter_tools(tools: list[Any]) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """Yield ``(namespace, tool)`` for each function tool, looking inside namespace tools."""
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("tools")
        if isinstance(inner, list):
            for sub in inner:
                if isinstance(sub, dict):
                    yield tool.get("name"), sub
        else:
            yield None, tool


def tool_names(body: Any) -> list[str]:
    """Every tool name the request advertises to the model (``namespace/name`` for nested)."""
    if not isinstance(body, dict):
        return []
    names = []
    for namespace, tool in iter_tools(body.get("tools") or []):
        name = str(tool.get("name") or tool.get("type"))
        names.append(f"{namespace}/{name}" if namespace else name)
    return names


def function_call_outputs(body: Any) -> list[dict[str, Any]]:
    """The ``function_call_output`` items in a request's ``input``."""
    if not isinstance(body, dict) or not isinstance(body.get("input"), list):
        return []
    return [
        item
        for item in body["input"]
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def output_text(item: dict[str, Any]) -> str:
    """A function call output's text, whether Codex sent a string or a list of content parts."""
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(str(part.get("text", "")) for part in output if isinstance(part, dict))
    if isinstance(output, dict):
        return str(output.get("content", output))
    return json.dumps(output)


class FakeResponsesAPI:
    """The fake on ``127.0.0.1`` with a free port; use as a context manager."""

    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.requests: list[Recorded] = []
        self.called_tool: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    def __enter__(self) -> FakeResponsesAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def model_requests(self) -> list[Recorded]:
        """The POSTs to ``/responses``, in order."""
        with self._lock:
            return [
                r for r in self.requests if r.method == "POST" and r.path.endswith("/responses")
            ]

    def describe(self, limit: int = 4000) -> str:
        """The recorded requests, shortened, for an assertion message."""
        lines = []
        with self._lock:
            for r in self.requests:
                summary: Any = r.body
                if isinstance(r.body, dict):
                    summary = {
                        "tools": tool_names(r.body),
                        "input": r.body.get("input"),
                    }
                text = json.dumps(summary, default=str)
                lines.append(f"{r.method} {r.path}: {text[:limit]}")
        return "\n".join(lines) or "(no requests)"

    # -- the answers ---------------------------------------------------------------------

    def _pick_tool(self, body: Any) -> tuple[str | None, str]:
        script = self.script
        candidates = [
            (namespace, str(tool.get("name", "")))
            for namespace, tool in iter_tools(body.get("tools") or [])
            if str(tool.get("name", "")).endswith(script.tool_suffix)
        ]
        for namespace, name in candidates:
            if script.server_hint in f"{namespace or ''}{name}":
                return namespace, name
        if candidates:
            return candidates[0]
        # No such tool advertised (e.g. the MCP server did not start): call the name Codex
        # would use anyway, so the run still ends and the test can show what happened.
        return None, f"mcp__goat-memory__{script.tool_suffix}"

    def answer(self, body: Any) -> list[dict[str, Any]]:
        """The SSE events answering one ``/responses`` request."""
        n = len(self.model_requests())
        rid = f"resp_{n}"
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}
        ]
        if not function_call_outputs(body):
            namespace, name = self._pick_tool(body)
            item: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": name,
                "arguments": json.dumps({"query": self.script.query}),
                "status": "completed",
            }
            if namespace:
                item["namespace"] = namespace
            self.called_tool = item
        else:
            item = {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": self.script.final_text, "annotations": []}
                ],
            }
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**item, "content": []},
                }
            )
            events.append(
                {
                    "type": "response.output_text.delta",
                    "output_index": 0,
                    "content_index": 0,
                    "item_id": item["id"],
                    "delta": self.script.final_text,
                }
            )
        events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
        events.append(
            {
                "type": "response.completed",
                "response": {"id": rid, "status": "completed", "output": [item], "usage": _usage()},
            }
        )
        return events

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _record(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.headers.get("Content-Encoding") == "zstd" and raw:
                    body: Any = {"undecoded": "zstd", "bytes": len(raw)}
                else:
                    try:
                        body = json.loads(raw) if raw else None
                    except ValueError:
                        body = raw.decode("utf-8", "replace")
                with fake._lock:
                    fake.requests.append(
                        Recorded(self.command, self.path, dict(self.headers.items()), body)
                    )
                return body

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._record()
                if self.path.split("?")[0].endswith("/models"):
                    self._json(200, {"models": [], "data": [], "object": "list"})
                else:
                    self._json(404, {"error": {"message": f"no {self.path} here"}})

            def do_POST(self) -> None:
                body = self._record()
                if not self.path.split("?")[0].endswith("/responses"):
                    self._json(404, {"error": {"message": f"no {self.path} here"}})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in fake.answer(body if isinstance(body, dict) else {}):
                    self.wfile.write(_sse(event))
                    self.wfile.flush()
                self.close_connection = True

        return Handler


if __name__ == "__main__":
    with FakeResponsesAPI() as fake:
        print(fake.base_url, flush=True)
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        print(fake.describe())
