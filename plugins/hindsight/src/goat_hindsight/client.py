"""A typed client of ONE bank on Hindsight's single-bank Streamable HTTP MCP endpoint.

``{base_url}/mcp/{bank_id}/`` with the mcp 2.x SDK (which runs on httpx2). Behaviour follows
the real Hindsight 1.1.0 server and what the SDK raises where:

- **Ownership.** The MCP connection lives in a runner task inside a small event loop thread
  the client owns (an anyio blocking portal). Callers on any loop hand calls over; a
  transport crash (which cancels whatever task awaits it) becomes a typed error for the
  caller instead of a cancellation, and a cancelled caller never tears the session down.
- **Connect** = ``initialize``, every page of ``tools/list``, refuse a server lacking any of
  :data:`REQUIRED_TOOLS` (naming them), then ``get_bank``. A bank the server does not know is
  :class:`~goat_hindsight.errors.BankNotFound`; as every call needs a connection confirmed by
  ``get_bank``, ``retain`` and ``reflect`` (which would create the bank) are never sent to an
  unknown bank.
- **Allow-list.** Only :data:`ALLOWED_TOOLS` can be called (``get_operation`` only when the
  server offers it); anything else is :class:`~goat_hindsight.errors.ForbiddenTool` before
  anything is sent.
- **Failures.** A tool rejection is a request error (session kept). A transport or protocol
  failure closes the connection; the next call reconnects after a jittered exponential
  backoff (injectable clock, sleep and random source). "Session not found" (the server
  restarted; the request was not executed) re-initialises once and resends. HTTP 401/403
  is :class:`~goat_hindsight.errors.HindsightAuthError` and blocks further calls without
  contacting the server until :meth:`HindsightClient.check` (the user checks again) or a
  new client (configuration changed). A write that failed after it may have reached the
  tool is :class:`~goat_hindsight.errors.WriteOutcomeUnknown` and is never replayed.
- **Bounds.** Request size checked before sending; response bodies capped (plain JSON and
  SSE, identity encoding); per-operation MCP deadlines below the httpx2 timeouts.
- **Secrets.** The API key is read through a callable when connecting and only ever placed
  in the ``Authorization: Bearer`` header; never in arguments, logs, errors or reprs.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread
import httpx2
from anyio.streams.memory import MemoryObjectSendStream
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import REQUEST_TIMEOUT, CallToolResult, PaginatedRequestParams, TextContent
from pydantic import ValidationError

from goat_core.errors import GoatError, ProviderUnavailable
from goat_core.logs import RedactSecrets, get_logger, redact, register_secret
from goat_hindsight.errors import (
    BankNotFound,
    ForbiddenTool,
    HindsightAuthError,
    IncompatibleServer,
    MemoryNotFound,
    ProtocolViolation,
    RequestTooLarge,
    ServerUnavailable,
    ToolRejected,
    WriteOutcomeUnknown,
)
from goat_hindsight.results import parse_result
from goat_hindsight.settings import HindsightSettings, mcp_url
from goat_hindsight.transport import CappedTransport

__all__ = [
    "ALLOWED_TOOLS",
    "REQUIRED_TOOLS",
    "WRITE_TOOLS",
    "Backoff",
    "Deadlines",
    "HindsightClient",
    "Limits",
]

T = TypeVar("T")

#: The six tools GOAT needs; a server lacking any of them is refused.
REQUIRED_TOOLS = frozenset(
    {"retain", "recall", "reflect", "list_memories", "get_memory", "get_bank"}
)
#: Everything the client can ever call: the six plus ``get_operation`` (when offered).
ALLOWED_TOOLS = REQUIRED_TOOLS | {"get_operation"}
#: Tools that change the bank (never replayed after an uncertain failure). ``reflect`` is
#: included because Hindsight creates an unknown bank on it.
WRITE_TOOLS = frozenset({"retain"})
_BANK_CREATING = frozenset({"retain", "reflect"})
_SESSION_LOST = "session not found"
_MAX_TOOL_PAGES = 100

log = get_logger("goat_hindsight.client")


@dataclass(frozen=True)
class Deadlines:
    """Per-operation MCP deadlines in seconds (``read_timeout_seconds`` of each request).

    The httpx2 read timeout is set ``backstop`` seconds above the longest, so a slow server
    surfaces as a clean deadline error rather than a torn transport.
    """

    connect: float = 10.0
    get_bank: float = 10.0
    retain: float = 20.0
    recall: float = 30.0
    reflect: float = 120.0
    list_memories: float = 30.0
    get_memory: float = 15.0
    get_operation: float = 15.0
    backstop: float = 10.0

    def for_tool(self, tool: str) -> float:
        return float(getattr(self, tool))

    @property
    def longest(self) -> float:
        return max(
            self.connect,
            self.get_bank,
            self.retain,
            self.recall,
            self.reflect,
            self.list_memories,
            self.get_memory,
            self.get_operation,
        )


@dataclass(frozen=True)
class Limits:
    """Size bounds in bytes: serialised tool arguments (checked before sending; Hindsight's
    server refuses bodies over 4 MiB) and every response body / SSE event."""

    max_request_bytes: int = 1024 * 1024
    max_response_bytes: int = 16 * 1024 * 1024


@dataclass
class Backoff:
    """Jittered exponential backoff between reconnect attempts, in memory, per client.

    After ``n`` consecutive failures the next attempt waits ``min(cap, base * 2**(n-1))``
    seconds, +-``jitter`` (fraction), counted from the last failure on ``clock``.
    """

    base: float = 0.25
    cap: float = 10.0
    jitter: float = 0.2
    rng: random.Random = field(default_factory=random.Random)
    clock: Callable[[], float] = time.monotonic
    failures: int = 0
    last_failure: float = 0.0
    _delay: float = 0.0

    def failed(self) -> None:
        self.failures += 1
        raw = min(self.cap, self.base * 2 ** (self.failures - 1))
        self._delay = raw * (1 + self.rng.uniform(-self.jitter, self.jitter))
        self.last_failure = self.clock()

    def succeeded(self) -> None:
        self.failures = 0
        self._delay = 0.0

    def remaining(self) -> float:
        """Seconds still to wait before the next attempt (0 when none)."""
        if not self.failures:
            return 0.0
        return max(0.0, self.last_failure + self._delay - self.clock())


class _SessionLost(Exception):
    """The server no longer knows the session (restart); the request was not executed."""


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _flatten(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _flatten(sub)]
    return [exc]


@dataclass
class _Call:
    tool: str
    arguments: dict[str, Any]
    deadline: float
    done: anyio.Event = field(default_factory=anyio.Event)
    payload: dict[str, Any] | None = None
    error: BaseException | None = None
    sent: bool = False


class HindsightClient:
    """``await client.call("recall", {"query": ...})`` -> the validated result object.

    :param settings: validated settings (server and bank).
    :param api_key: ``api_key() -> str | None``, read when connecting (credential store).
    :param http_client: ``http_client(**kwargs) -> httpx2.AsyncClient``, the egress-guarded
        factory from :class:`~goat_core.contract.ProviderContext`.
    :param transport: the inner httpx2 transport (tests: ``httpx2.MockTransport``); default
        a real ``httpx2.AsyncHTTPTransport``.
    :param sleep: ``await sleep(seconds)`` used for backoff waits (tests record them).
    """

    def __init__(
        self,
        settings: HindsightSettings,
        *,
        api_key: Callable[[], str | None],
        http_client: Callable[..., httpx2.AsyncClient],
        transport: httpx2.AsyncBaseTransport | None = None,
        deadlines: Deadlines | None = None,
        limits: Limits | None = None,
        backoff: Backoff | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        key_hint: str = "store the right API key for this binding, then check again",
    ) -> None:
        """:param key_hint: how to fix a refused or missing key, appended to the 401/403
        error (the provider names the exact commands for its scope)."""
        self.settings = settings
        self._key_hint = key_hint
        self.server = settings.base_url
        self.bank_id = settings.bank_id
        self.url = mcp_url(settings)
        self._api_key = api_key
        #: the key this client sends, in every form: redacted from all a server says
        self._secrets = RedactSecrets()
        self._http_client_factory = http_client
        self._transport_seam = transport
        self.deadlines = deadlines or Deadlines()
        self.limits = limits or Limits()
        self.backoff = backoff or Backoff()
        self._sleep = sleep
        # portal-side state (touched only on the client's own loop thread)
        self._portal_cm: AbstractContextManager[anyio.from_thread.BlockingPortal] | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._portal_lock = anyio.Lock()
        self._host_future: Future[None] | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._send: MemoryObjectSendStream[_Call] | None = None
        self._capped: CappedTransport | None = None
        self._post_status: int | None = None
        self._egress_refused = False
        self._auth_blocked: str | None = None
        self._had_key = False
        self._runner_done: anyio.Event | None = None
        self._closed = False
        #: tool names the server offered at the last connect
        self.offered_tools: frozenset[str] = frozenset()
        #: the last ``get_bank`` result (``None`` until confirmed)
        self.bank: dict[str, Any] | None = None
        #: number of completed connects (initialize + tools + get_bank)
        self.connects = 0

    def __repr__(self) -> str:
        return f"HindsightClient(url={self.url!r}, api_key=<redacted>)"

    # -- public API (any event loop) ----------------------------------------------------------
    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Call one allow-listed tool and return its validated result object.

        :raises ForbiddenTool: ``tool`` is not in :data:`ALLOWED_TOOLS`, or is
            ``get_operation`` and the server does not offer it. Nothing is sent.
        :raises RequestTooLarge: the serialised arguments exceed ``limits.max_request_bytes``.
        :raises ToolRejected: a well-formed rejection (session kept).
        :raises BankNotFound: the bank does not exist on the server.
        :raises HindsightAuthError: HTTP 401/403 now or earlier (no retry until ``check``).
        :raises WriteOutcomeUnknown: a write failed after it may have reached the tool.
        :raises ProtocolViolation, ServerUnavailable, IncompatibleServer: see the module doc.
        """
        if tool not in ALLOWED_TOOLS:
            raise ForbiddenTool(
                f"GOAT never calls Hindsight tool {tool!r}; "
                f"allowed: {', '.join(sorted(ALLOWED_TOOLS))}"
            )
        args = dict(arguments or {})
        size = len(json.dumps(args, ensure_ascii=False).encode("utf-8"))
        if size > self.limits.max_request_bytes:
            raise RequestTooLarge(
                f"`{tool}` arguments are {size} bytes, over the request limit of "
                f"{self.limits.max_request_bytes} bytes; nothing was sent"
            )
        return await self._in_portal(self._call_here, tool, args)

    async def check(self) -> dict[str, Any]:
        """Validate the bank now: ``get_bank`` on the existing session (or a fresh connect).
        Clears an auth block and skips the backoff wait (an explicit check by the user).

        :returns: the ``get_bank`` result.
        """
        return await self._in_portal(self._check_here)

    async def close(self) -> None:
        """Close the session (DELETE) and stop the client's loop thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._portal is None:
            return
        await anyio.to_thread.run_sync(self._close_blocking)

    # -- portal plumbing ----------------------------------------------------------------------
    async def _in_portal(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        if self._closed:
            raise ServerUnavailable(f"the client of bank `{self.bank_id}` is closed")
        portal = await self._ensure_portal()
        future = portal.start_task_soon(fn, *args)
        try:
            if _on_asyncio():
                # shielded: a cancelled caller stops waiting, the call itself runs to its end
                return await asyncio.shield(asyncio.wrap_future(future))
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except GoatError as exc:  # last line: whatever it quotes, never the key
            exc.message = self._redact(exc.message)
            exc.args = (exc.message,)
            exc.details = self._redact(exc.details)
            raise

    def _redact(self, value: Any) -> Any:
        """``value`` (text, or JSON-like data) with the key this client sends, and every
        secret handed out in this process, redacted in every form (docs/design.md,
        Credentials and egress). A server's text goes through here before it is cut short,
        so no prefix of a key survives truncation."""
        if isinstance(value, str):
            return redact(self._secrets.scrub_known(value))
        if isinstance(value, dict):
            return {k: self._redact(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._redact(v) for v in value)
        return value

    async def _ensure_portal(self) -> anyio.from_thread.BlockingPortal:
        if self._portal is not None:
            return self._portal
        async with self._portal_lock:
            if self._portal is None:
                await anyio.to_thread.run_sync(self._start_portal_blocking)
        assert self._portal is not None
        return self._portal

    def _start_portal_blocking(self) -> None:
        cm = anyio.from_thread.start_blocking_portal()
        portal = cm.__enter__()
        self._host_future, _ = portal.start_task(self._host)
        self._portal_cm, self._portal = cm, portal

    async def _host(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._lock = anyio.Lock()
            task_status.started()
            await anyio.sleep_forever()

    async def _shutdown_here(self) -> None:
        if self._send is not None:  # end the session gracefully (the SDK sends DELETE)
            self._send.close()
            if self._runner_done is not None:
                with anyio.move_on_after(5):
                    await self._runner_done.wait()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def _close_blocking(self) -> None:
        portal, cm = self._portal, self._portal_cm
        if portal is None or cm is None:
            return
        try:
            portal.call(self._shutdown_here)
            if self._host_future is not None:
                try:
                    self._host_future.result(timeout=15)
                except BaseException:  # cancelled on shutdown: expected
                    pass
        finally:
            self._portal = self._portal_cm = None
            cm.__exit__(None, None, None)

    # -- on the client's loop -----------------------------------------------------------------
    async def _check_here(self) -> dict[str, Any]:
        assert self._lock is not None
        async with self._lock:
            self._auth_blocked = None
            if self._send is None:
                await self._connect(wait_backoff=False)
                assert self.bank is not None
                return self.bank
        return await self._call_here("get_bank", {})

    async def _call_here(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        assert self._lock is not None
        async with self._lock:
            if self._auth_blocked is not None:
                raise HindsightAuthError(self._auth_blocked)
            send = self._send or await self._connect(wait_backoff=True)
            if tool == "get_operation" and tool not in self.offered_tools:
                raise ForbiddenTool(f"server `{self.server}` does not offer get_operation")
            try:
                return await self._dispatch(send, tool, args)
            except _SessionLost:
                log.info("hindsight.session_lost", server=self.server, bank=self.bank_id)
                send = await self._connect(wait_backoff=False)
                try:
                    return await self._dispatch(send, tool, args)
                except _SessionLost:
                    raise self._uncertain(
                        tool, ServerUnavailable(f"`{self.server}` lost the MCP session twice")
                    ) from None
            except BankNotFound:
                self.bank = None  # refuse bank-creating calls until get_bank confirms again
                raise

    def _uncertain(self, tool: str, error: GoatError) -> GoatError:
        if tool in WRITE_TOOLS and not isinstance(error, HindsightAuthError):
            return WriteOutcomeUnknown(
                f"`{tool}` may or may not have reached bank `{self.bank_id}`: {error.message}; "
                "it is not retried"
            )
        return error

    async def _dispatch(
        self, send: MemoryObjectSendStream[_Call], tool: str, args: dict[str, Any]
    ) -> dict[str, Any]:
        if tool in _BANK_CREATING and self.bank is None:
            raise BankNotFound(
                f"bank `{self.bank_id}` not confirmed on `{self.server}`; `{tool}` is refused "
                "because Hindsight would create the bank",
                bank_id=self.bank_id,
            )
        deadline = self.deadlines.for_tool(tool)
        call = _Call(tool, args, deadline)
        try:
            await send.send(call)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise ServerUnavailable(f"the connection to `{self.server}` is closed") from None
        with anyio.fail_after(deadline + self.deadlines.backstop + 5):
            await call.done.wait()
        if call.error is not None:
            if isinstance(call.error, _SessionLost):
                raise call.error
            assert isinstance(call.error, GoatError)
            if isinstance(call.error, ToolRejected | BankNotFound) or not call.sent:
                raise call.error
            if isinstance(call.error, ServerUnavailable | ProtocolViolation):
                raise self._uncertain(tool, call.error) from None
            raise call.error
        assert call.payload is not None
        return call.payload

    async def _connect(self, *, wait_backoff: bool) -> MemoryObjectSendStream[_Call]:
        if self._send is not None:  # replace a live session: close it first
            self._send.close()
            self._send = None
        if wait_backoff:
            delay = self.backoff.remaining()
            if delay > 0:
                log.info("hindsight.reconnect_backoff", delay_s=round(delay, 3))
                await self._sleep(delay)
        assert self._tg is not None
        try:
            send: MemoryObjectSendStream[_Call] = await self._tg.start(self._run_connection)
        except HindsightAuthError as exc:
            self._auth_blocked = exc.message
            raise
        except GoatError:
            self.backoff.failed()
            raise
        self.backoff.succeeded()
        self._send = send
        return send

    def _make_http_client(self) -> httpx2.AsyncClient:
        headers = {"Accept-Encoding": "identity"}
        key = self._api_key()
        self._had_key = bool(key)
        if key:
            headers["Authorization"] = f"Bearer {key}"
            self._secrets.add_secret(key)
            register_secret(key)  # logs too
        self._capped = CappedTransport(self.limits.max_response_bytes, inner=self._transport_seam)

        async def record(response: httpx2.Response) -> None:  # must not raise
            if response.request.method == "POST":
                self._post_status = response.status_code
                if response.headers.get("x-goat-egress") == "refused":
                    self._egress_refused = True

        timeout = httpx2.Timeout(
            self.deadlines.connect, read=self.deadlines.longest + self.deadlines.backstop
        )
        return self._http_client_factory(
            headers=headers,
            timeout=timeout,
            transport=self._capped,
            event_hooks={"response": [record]},
        )

    async def _run_connection(
        self, *, task_status: anyio.abc.TaskStatus[MemoryObjectSendStream[_Call]]
    ) -> None:
        current: _Call | None = None
        started = False
        send, receive = anyio.create_memory_object_stream[_Call](0)
        done = self._runner_done = anyio.Event()
        self._post_status = None
        self._egress_refused = False
        t0 = time.perf_counter()
        try:
            async with (
                self._make_http_client() as http,
                streamable_http_client(
                    self.url, http_client=http, max_sse_event_size=self.limits.max_response_bytes
                ) as (read, write),
                ClientSession(read, write, read_timeout_seconds=self.deadlines.connect) as session,
            ):
                await session.initialize()
                await self._check_tools(session)
                self.bank = None
                result = await session.call_tool(
                    "get_bank", {}, read_timeout_seconds=self.deadlines.get_bank
                )
                self.bank = self._parse("get_bank", result)
                self.connects += 1
                log.info(
                    "hindsight.connected",
                    server=self.server,
                    bank=self.bank_id,
                    ms=round((time.perf_counter() - t0) * 1000, 1),
                )
                started = True
                task_status.started(send)
                async with receive:
                    async for current in receive:
                        self._post_status = None
                        self._egress_refused = False
                        current.sent = True
                        try:
                            result = await session.call_tool(
                                current.tool,
                                current.arguments,
                                read_timeout_seconds=current.deadline,
                            )
                        except MCPError as exc:
                            if exc.code != REQUEST_TIMEOUT:
                                raise
                            # the SDK cancelled the request; the session is still usable
                            current.error = ServerUnavailable(
                                f"`{current.tool}` got no answer within its deadline of "
                                f"{current.deadline:g} s from `{self.server}`"
                            )
                        else:
                            try:
                                current.payload = self._parse(current.tool, result)
                            except (ToolRejected, BankNotFound, MemoryNotFound) as rejection:
                                current.error = rejection  # a request error: session kept
                        current.done.set()
                        current = None
        except BaseException as exc:  # classify, hand to the caller, then re-raise or absorb
            error = self._classify(exc)
            if error is None:
                raise  # plain cancellation (closing)
            log.warning(
                "hindsight.disconnected",
                server=self.server,
                bank=self.bank_id,
                reason=type(error).__name__,
                detail=str(error)[:200],
            )
            if current is not None:
                current.error = error
            if not started:
                if isinstance(error, _SessionLost):
                    error = ServerUnavailable(f"`{self.server}` lost the session while connecting")
                raise error from None
            if not isinstance(error, _SessionLost | HindsightAuthError):
                self.backoff.failed()
            if isinstance(error, HindsightAuthError):
                self._auth_blocked = error.message
        finally:
            done.set()
            if self._send is send:
                self._send = None
            send.close()
            if current is not None:
                if current.error is None and current.payload is None:
                    current.error = ServerUnavailable("the client was closed")
                current.done.set()

    async def _check_tools(self, session: ClientSession) -> None:
        names: set[str] = set()
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
            names.update(tool.name for tool in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        else:
            raise ProtocolViolation(
                f"`{self.server}` kept paginating tools/list past {_MAX_TOOL_PAGES} pages"
            )
        self.offered_tools = frozenset(names & ALLOWED_TOOLS)
        missing = sorted(REQUIRED_TOOLS - names)
        if missing:
            raise IncompatibleServer(
                f"`{self.server}` lacks the Hindsight tool(s) {', '.join(missing)} that GOAT "
                "needs (retain, recall, reflect, list_memories, get_memory, get_bank)",
                missing=missing,
            )

    def _parse(self, tool: str, result: Any) -> dict[str, Any]:
        if not isinstance(result, CallToolResult):
            raise ProtocolViolation(f"`{tool}` answered a {type(result).__name__}, not a result")
        texts = [block.text for block in result.content if isinstance(block, TextContent)]
        if len(texts) != len(result.content):
            raise ProtocolViolation(f"`{tool}` answered non-text content blocks")
        return parse_result(
            tool,
            is_error=bool(result.is_error),
            texts=self._redact(texts),
            structured=self._redact(result.structured_content),
            bank_id=self.bank_id,
            server=self.server,
        )

    def _classify(self, exc: BaseException) -> BaseException | None:
        """Map SDK / httpx2 / anyio failures to typed errors; ``None`` = plain cancellation."""
        leaves = _flatten(exc)
        for leaf in leaves:
            if isinstance(leaf, GoatError | _SessionLost):
                return leaf
        if self._egress_refused:
            return ProviderUnavailable(
                f"egress refused by GOAT for `{self.url}`; bind it explicitly with `goat bind`"
            )
        if self._post_status in (401, 403):
            how = "refused the API key" if self._had_key else "requires an API key"
            return HindsightAuthError(
                f"`{self.server}` {how} (HTTP {self._post_status}); {self._key_hint}"
            )
        for leaf in leaves:
            if isinstance(leaf, MCPError):
                message = self._redact(leaf.message or "")
                if leaf.code == -32600 and _SESSION_LOST in message.lower():
                    return _SessionLost(message)
                if self._capped is not None and self._capped.tripped:
                    self._capped.tripped = 0
                    return ProtocolViolation(
                        f"`{self.server}` sent a response over the cap of "
                        f"{self.limits.max_response_bytes} bytes"
                    )
                if leaf.code == -32700:
                    return ProtocolViolation(
                        f"`{self.server}` sent malformed or truncated JSON ({message[:120]})"
                    )
                if leaf.code == REQUEST_TIMEOUT:
                    return ServerUnavailable(f"`{self.server}` did not answer in time")
                status = f"HTTP {self._post_status}, " if self._post_status else ""
                return ServerUnavailable(
                    f"`{self.server}` failed ({status}MCP error {leaf.code}: {message[:120]})"
                )
            if isinstance(leaf, ValidationError):
                return ProtocolViolation(
                    f"`{self.server}` sent an invalid MCP message ({leaf.error_count()} error(s))"
                )
            if isinstance(leaf, httpx2.TimeoutException):
                return ServerUnavailable(f"`{self.server}` timed out ({type(leaf).__name__})")
            if isinstance(leaf, httpx2.TransportError):
                return ServerUnavailable(f"cannot reach `{self.server}` ({type(leaf).__name__})")
            if isinstance(leaf, RuntimeError):
                return ProtocolViolation(
                    self._redact(f"`{self.server}` sent an invalid result ({leaf})")[:200]
                )
        if all(isinstance(leaf, anyio.get_cancelled_exc_class()) for leaf in leaves):
            return None
        return ServerUnavailable(
            f"connection to `{self.server}` failed ({type(leaves[0]).__name__})"
        )
