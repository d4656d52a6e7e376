"""A scripted stand-in for Hindsight 1.1.0's single-bank MCP endpoint, as an
``httpx2.MockTransport`` handler (no sockets). Its answers copy the recorded wire shapes of
the real server as recorded: one text block holding the compact
JSON of ``structuredContent``, SSE framing, ``mcp-session-id`` headers, 401 JSON bodies and
``404 Session not found`` after a restart.

Override a tool's answer with ``fake.script[tool] = fn(args) -> dict | bytes |
httpx2.Response | Exception``; a ``dict`` is wrapped as a normal result, ``{"__result__":
{...}}`` is sent as the raw MCP result, ``bytes`` as a raw body.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx2

#: The tools of the real single-bank endpoint (``probe-out-chunks/tools.json``).
ALL_TOOLS = tuple(
    (
        "retain sync_retain recall reflect list_mental_models get_mental_model create_mental_model "
        "update_mental_model delete_mental_model refresh_mental_model clear_mental_model "
        "list_directives create_directive delete_directive list_memories get_memory update_memory "
        "invalidate_memory list_documents get_document delete_document list_operations "
        "get_operation cancel_operation list_tags get_bank update_bank delete_bank clear_memories "
        "get_knowledge_base_tree search_knowledge_base get_knowledge_page create_knowledge_folder "
        "create_knowledge_page update_knowledge_node delete_knowledge_node"
    ).split()
)


def wire_result(payload: Any) -> dict[str, Any]:
    """A normal tool result as the real server sends it."""
    text = json.dumps(payload, separators=(",", ":"))
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": payload,
        "isError": False,
    }


def error_result(message: str) -> dict[str, Any]:
    """An ``isError`` result (argument validation / unknown tool)."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


class FakeHindsight:
    """A fake bank ``bank_id`` with in-memory memories; see the module docstring."""

    def __init__(
        self,
        bank_id: str = "team",
        *,
        tools: tuple[str, ...] = ALL_TOOLS,
        bank_exists: bool = True,
        token: str | None = None,
        sse: bool = True,
        page_size: int | None = None,
    ) -> None:
        self.bank_id = bank_id
        self.tools = list(tools)
        self.bank_exists = bank_exists
        self.token = token
        self.sse = sse
        self.page_size = page_size  # tools/list pagination
        self.memories: list[dict[str, Any]] = []  # newest first
        self.operations: dict[str, str] = {}
        self.script: dict[str, Callable[[dict[str, Any]], Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.requests: list[httpx2.Request] = []
        self.sessions: set[str] = set()
        self.initializes = 0
        self.down = False  # every request fails with ConnectError

    # -- state helpers ------------------------------------------------------------------------
    def add_memory(self, text: str, context: str = "remember") -> str:
        mid = str(uuid.uuid4())
        self.memories.insert(
            0,
            {
                "id": mid,
                "text": text,
                "context": context,
                "date": "2026-11-29T00:00:00+00:00",
                "fact_type": "world",
                "document_id": None,
                "tags": [],
                "entities": "",
            },
        )
        return mid

    def restart(self) -> None:
        """Forget every session (the real server answers 404 "Session not found")."""
        self.sessions.clear()

    def tool_calls(self, name: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        return [c for c in self.calls if name is None or c[0] == name]

    # -- HTTP ---------------------------------------------------------------------------------
    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if self.down:
            raise httpx2.ConnectError("All connection attempts failed", request=request)
        if self.token is not None:
            auth = request.headers.get("authorization")
            if auth is None:
                return httpx2.Response(401, json={"error": "Authorization header required"})
            if auth not in (f"Bearer {self.token}", self.token):
                return httpx2.Response(401, json={"error": "Invalid authentication token"})
        if request.method == "GET":
            return httpx2.Response(405)
        if request.method == "DELETE":
            self.sessions.discard(request.headers.get("mcp-session-id", ""))
            return httpx2.Response(200)
        body = json.loads(request.content)
        if "id" not in body:
            return httpx2.Response(202)
        rid, method = body["id"], body["method"]
        if method == "initialize":
            self.initializes += 1
            sid = uuid.uuid4().hex
            self.sessions.add(sid)
            return self._reply(
                rid,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "hindsight-mcp-server", "version": "1.1.0"},
                },
                headers={"mcp-session-id": sid},
            )
        if request.headers.get("mcp-session-id") not in self.sessions:
            return httpx2.Response(
                404,
                json={
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32600, "message": "Session not found"},
                },
            )
        if method == "tools/list":
            return self._reply(rid, self._tools_page((body.get("params") or {}).get("cursor")))
        if method == "tools/call":
            name = body["params"]["name"]
            args = body["params"].get("arguments") or {}
            self.calls.append((name, args))
            out = self._tool(name, args)
            if isinstance(out, httpx2.Response):
                return out
            if isinstance(out, bytes):
                return httpx2.Response(
                    200, content=out, headers={"content-type": "application/json"}
                )
            if isinstance(out, dict) and "__result__" in out:
                return self._reply(rid, out["__result__"])
            return self._reply(rid, wire_result(out))
        return self._reply(rid, {})

    def _tools_page(self, cursor: str | None) -> dict[str, Any]:
        start = int(cursor or 0)
        size = self.page_size or len(self.tools)
        page = self.tools[start : start + size]
        result: dict[str, Any] = {
            "tools": [
                {
                    "name": n,
                    "inputSchema": {"type": "object"},
                    "outputSchema": {"type": "object", "additionalProperties": True},
                }
                for n in page
            ]
        }
        if start + size < len(self.tools):
            result["nextCursor"] = str(start + size)
        return result

    def _reply(
        self, rid: Any, result: dict[str, Any], headers: dict[str, str] | None = None
    ) -> httpx2.Response:
        message = {"jsonrpc": "2.0", "id": rid, "result": result}
        if self.sse:
            data = f"event: message\ndata: {json.dumps(message)}\n\n".encode()
            return httpx2.Response(
                200, content=data, headers={"content-type": "text/event-stream", **(headers or {})}
            )
        return httpx2.Response(200, json=message, headers=headers)

    # -- tools --------------------------------------------------------------------------------
    def _tool(self, name: str, args: dict[str, Any]) -> Any:
        if name not in self.tools:
            return {"__result__": error_result(f"Unknown tool: {name!r}")}
        if name in self.script:
            out = self.script[name](args)
            if isinstance(out, Exception):
                raise out
            return out
        missing = {"error": f"Operation validation failed: Bank '{self.bank_id}' not found"}
        if name == "get_bank":
            if not self.bank_exists:
                return {"error": f"Bank '{self.bank_id}' not found"}
            return {
                "bank_id": self.bank_id,
                "name": self.bank_id,
                "disposition": {"skepticism": 3, "literalism": 3, "empathy": 3},
                "mission": "",
            }
        if name in ("retain", "reflect"):
            self.bank_exists = True  # the real server creates the bank implicitly
        if name == "retain":
            if "content" not in args:
                return {"__result__": error_result("1 validation error for call[retain]")}
            self.add_memory(args["content"], args.get("context", "general"))
            op = str(uuid.uuid4())
            self.operations[op] = "completed"
            return {"status": "accepted", "message": "Memory storage initiated", "operation_id": op}
        if not self.bank_exists:
            return missing
        if name == "recall":
            words = set(args["query"].lower().split())
            hits = [m for m in self.memories if words & set(m["text"].lower().split())]
            return {
                "results": [
                    {**m, "scores": {"final": 1.0 - i * 0.1, "semantic": 0.5}}
                    for i, m in enumerate(hits)
                ],
                "trace": None,
            }
        if name == "reflect":
            return {"text": "mock response", "structured_output": None, "usage": {}}
        if name == "list_memories":
            offset, limit = args.get("offset", 0), args.get("limit", 100)
            return {
                "items": self.memories[offset : offset + limit],
                "total": len(self.memories),
                "limit": limit,
                "offset": offset,
            }
        if name == "get_memory":
            for m in self.memories:
                if m["id"] == args["memory_id"]:
                    return {**m, "type": m["fact_type"]}
            return {"error": f"Memory '{args['memory_id']}' not found"}
        if name == "get_operation":
            status = self.operations.get(args["operation_id"])
            if status is None:  # what Hindsight 1.1.0 answers for an unknown operation
                return {"operation_id": args["operation_id"], "status": "not_found"}
            return {
                "operation_id": args["operation_id"],
                "status": status,
                "operation_type": "batch_retain",
                "error_message": None,
            }
        return {"__result__": error_result(f"fake does not implement {name}")}
