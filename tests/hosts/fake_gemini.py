"""A loopback fake of the Gemini API (generativelanguage v1beta), enough for a real Gemini CLI.

Gemini CLI with ``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT`` posts to
``/v1beta/models/<model>:streamGenerateContent?alt=sse`` (and possibly ``:generateContent`` or
``:countTokens``). The script: while no ``functionResponse`` part is in the request's
``contents``, answer with one ``functionCall`` to the declared function whose name ends in
``tool_suffix``; once a response is there, answer with plain text. Every request is recorded.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_TEXT = "GOAT answered; done."


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def declared_functions(body: Any) -> list[str]:
    """The function names a request declares to the model."""
    if not isinstance(body, dict):
        return []
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            for decl in tool.get("functionDeclarations") or []:
                if isinstance(decl, dict):
                    names.append(str(decl.get("name")))
    return names


def function_responses(body: Any) -> list[dict[str, Any]]:
    """The ``functionResponse`` parts in a request's ``contents``."""
    if not isinstance(body, dict):
        return []
    found = []
    for content in body.get("contents") or []:
        for part in (content or {}).get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                found.append(part["functionResponse"])
    return found


def _usage() -> dict[str, int]:
    return {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


class FakeGeminiAPI:
    """The fake on ``127.0.0.1`` with a free port; use as a context manager."""

    def __init__(
        self, query: str = "sentinel", tool_suffix: str = "recall", final_text: str = FINAL_TEXT
    ) -> None:
        self.query = query
        self.tool_suffix = tool_suffix
        self.final_text = final_text
        self.requests: list[Recorded] = []
        self.called_tool: str | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeGeminiAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def model_requests(self) -> list[Recorded]:
        """The generateContent / streamGenerateContent POSTs, in order."""
        with self._lock:
            return [r for r in self.requests if "generatecontent" in r.path.lower()]

    def describe(self, limit: int = 3000) -> str:
        lines = []
        with self._lock:
            for r in self.requests:
                summary: Any = r.body
                if isinstance(r.body, dict):
                    summary = {
                        "functions": declared_functions(r.body),
                        "contents": r.body.get("contents"),
                    }
                lines.append(f"{r.method} {r.path}: {json.dumps(summary, default=str)[:limit]}")
        return "\n".join(lines) or "(no requests)"

    def answer(self, body: Any) -> dict[str, Any]:
        """One GenerateContentResponse for a request."""
        names = declared_functions(body)
        wanted = [n for n in names if n.endswith(self.tool_suffix)]
        part: dict[str, Any]
        if wanted and not function_responses(body):
            self.called_tool = wanted[0]
            part = {"functionCall": {"name": wanted[0], "args": {"query": self.query}}}
        else:
            part = {"text": self.final_text}
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": _usage(),
            "modelVersion": "fake",
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _record(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
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
                self._json(404, {"error": {"code": 404, "message": f"no {self.path} here"}})

            def do_POST(self) -> None:
                body = self._record()
                path = self.path.split("?")[0]
                if path.endswith(":countTokens"):
                    self._json(200, {"totalTokens": 10})
                elif path.endswith(":streamGenerateContent"):
                    data = json.dumps(fake.answer(body)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(b"data: " + data + b"\r\n\r\n")
                    self.wfile.flush()
                    self.close_connection = True
                elif path.endswith(":generateContent"):
                    self._json(200, fake.answer(body))
                else:
                    self._json(404, {"error": {"code": 404, "message": f"no {path} here"}})

        return Handler
