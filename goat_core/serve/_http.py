"""``goat serve --http [HOST:]PORT``: Streamable HTTP, one endpoint per scope.

Only the scopes named at start are served: ``/mcp/global`` and ``/mcp/pen/<id>``; any other
path answers 404. Each endpoint has its own session manager, so a session id is known only
to the endpoint that issued it (elsewhere: 404). In front of every endpoint:

- loopback by default; any other address requires a bearer token, read from an owner-only
  file (``--token-file``) or the credential store (``--token-from-store``), never a flag value;
- a ``Host`` header outside loopback names is refused (421) on a loopback bind, and an
  ``Origin`` outside ``--allow-origin`` (default: none) gets 403 (DNS rebinding);
- at most :data:`MAX_SESSIONS` MCP sessions per endpoint (beyond, 503), each closed after
  :data:`SESSION_IDLE_SECONDS` without a request;
- a request body over :data:`MAX_BODY_BYTES` gets 413 (and one without a length, 411); a
  tool result is bounded by :data:`~goat_core.serve._tools.MAX_RESULT_BYTES`;
- a connection must send each request head within :data:`HEADER_TIMEOUT_SECONDS` and is
  closed after :data:`KEEP_ALIVE_SECONDS` idle, so idle or slow sockets never hold the
  server; a client that hangs up mid-request is one log line (``serve.client_gone``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goat_core.errors import BadInput, CredentialError

if TYPE_CHECKING:
    from goat_core.host import GoatHome
    from goat_core.serve._tools import ServedScope

#: Where ``goat serve-token`` keeps the bearer token in the credential store.
TOKEN_BINDING = "goat-serve"
TOKEN_NAME = "http_token"
#: Largest request body accepted (bytes).
MAX_BODY_BYTES = 1_048_576
#: Seconds a connection may take to send a whole request head, first or next; then it is
#: closed (a socket that sends nothing, or a head a byte at a time, holds nothing for long).
HEADER_TIMEOUT_SECONDS = 10.0
#: Seconds an idle keep-alive connection stays open after a response.
KEEP_ALIVE_SECONDS = 5.0
#: MCP sessions open at once on one endpoint; a new one past it gets 503 until one ends (a
#: client's DELETE, or :data:`SESSION_IDLE_SECONDS` without a request). A user's hosts open
#: one each, so this bounds the memory of a server whose clients never close their sessions.
MAX_SESSIONS = 256
#: Seconds a session may go without a request before it is closed.
SESSION_IDLE_SECONDS = 1800.0
#: Connections and requests served at once; beyond, 503. Far above what a user's clients
#: open, and idle sockets time out first (:data:`HEADER_TIMEOUT_SECONDS`).
MAX_CONNECTIONS = 1000
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def new_token() -> str:
    return secrets.token_urlsafe(32)


def parse_listen(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` to ``(host, port)``; the host defaults to
    loopback. :raises BadInput: not a port."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise BadInput(f"--http {text!r}: expected [HOST:]PORT")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token_file(path: Path) -> str:
    """The token in ``path``, which must be a regular file only its owner can read.

    :raises CredentialError: missing, empty, or readable by others.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise CredentialError(f"token file {str(path)!r} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "r", encoding="utf-8") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
            raise CredentialError(
                f"token file {str(path)!r} must be a regular file readable only by its owner "
                "(chmod 600)"
            )
        token = f.read().strip()
    if len(token) < 16:
        raise CredentialError(f"token file {str(path)!r} holds no token of 16+ characters")
    return token


def _timed_protocol() -> type[Any]:
    """uvicorn's h11 protocol with a deadline on every request head: armed when the
    connection opens and after each response, cleared when a whole head has arrived."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadDeadlineH11(H11Protocol):  # type: ignore[misc]
        _head_timer: Any = None

        def _arm_head_timer(self) -> None:
            self._clear_head_timer()
            self._head_timer = self.loop.call_later(HEADER_TIMEOUT_SECONDS, self._head_late)

        def _clear_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_head_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._clear_head_timer()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a whole request head arrived
                self._clear_head_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_head_timer()

    return HeadDeadlineH11


def _endpoint(scope_key: str) -> str:
    return "/mcp/global" if scope_key == "global" else "/mcp/pen/" + scope_key.split(":", 1)[1]


class ScopedEndpoints:
    """The ASGI app: one MCP session manager per served scope, behind the checks."""

    def __init__(
        self,
        served: Sequence[ServedScope],
        *,
        origins: Sequence[str] = (),
        token: str | None = None,
        loopback_only: bool = True,
        max_body: int = MAX_BODY_BYTES,
    ) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        from goat_core.serve._server import build_server

        self.origins = {o.rstrip("/") for o in origins}
        self.token = token.encode() if token else None
        self.loopback_only = loopback_only
        self.max_body = max_body
        self.managers: dict[str, Any] = {}
        for s in served:
            self.managers[_endpoint(s.served.scope.key)] = StreamableHTTPSessionManager(
                app=build_server(s),
                security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
                max_request_body_size=max_body,
                max_sessions=MAX_SESSIONS,
                session_idle_timeout=SESSION_IDLE_SECONDS,
            )

    @contextlib.asynccontextmanager
    async def running(self) -> Any:
        async with contextlib.AsyncExitStack() as stack:
            for manager in self.managers.values():
                await stack.enter_async_context(manager.run())
            yield

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"].rstrip("/")
        manager = self.managers.get(path)
        if manager is None:
            await _reply(send, 404, "no such endpoint: only the scopes named at start are served")
            return
        if self.loopback_only:
            host = headers.get("host", "")
            name = (
                host.rsplit(":", 1)[0].strip("[]") if not host.endswith("]") else host.strip("[]")
            )
            if not is_loopback(name):
                await _reply(send, 421, "Host is not a loopback name")
                return
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/") not in self.origins:
            await _reply(send, 403, "Origin not allowed (goat serve --allow-origin)")
            return
        if self.token is not None:
            auth = headers.get("authorization", "")
            given = auth[7:].strip().encode() if auth[:7].lower() == "bearer " else b""
            if not secrets.compare_digest(given, self.token):
                await _reply(send, 401, "a bearer token is required", bearer=True)
                return
        if scope["method"] == "POST":
            length = headers.get("content-length")
            if length is None or not length.isdigit():
                await _reply(send, 411, "Content-Length required")
                return
            if int(length) > self.max_body:
                await _reply(send, 413, f"request body over {self.max_body} bytes")
                return
            body = await _read_body(receive, int(length))
            if body is _TOO_SLOW:
                await _reply(send, 408, f"no whole body within {BODY_TIMEOUT_SECONDS:g} s")
                return
            if body is _TOO_LONG:
                await _reply(send, 413, "the body is longer than its Content-Length")
                return
            if not isinstance(body, bytes):  # the client hung up mid-body
                _gone(path, "the client left before its request body was whole")
                return
            problem = _bad_id(body)
            if problem is not None:
                await _reply_rpc_error(send, problem)
                return
            receive = _replay(body, receive)
        try:
            await manager.handle_request(scope, receive, send)
        except Exception as exc:  # a client gone mid-request: one line, never a traceback
            if not _is_disconnect(exc):
                raise
            _gone(path, type(exc).__name__)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with self.running():
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
        await send({"type": "lifespan.shutdown.complete"})


#: Seconds a request body may take to arrive whole once its head has.
BODY_TIMEOUT_SECONDS = 30.0


_TOO_SLOW, _TOO_LONG = object(), object()


async def _read_body(receive: Any, length: int) -> object:
    """The request body as ``bytes``, read whole; :data:`_TOO_SLOW` when it took over
    :data:`BODY_TIMEOUT_SECONDS`, :data:`_TOO_LONG` past ``length`` bytes, ``None`` when the
    client disconnected."""
    import anyio

    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(BODY_TIMEOUT_SECONDS):
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > length:
                return _TOO_LONG
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)
    return _TOO_SLOW


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that gives ``body`` whole first, then what ``receive`` gives."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await receive()
        return message

    return replay


def _bad_id(body: bytes) -> str | None:
    """Why ``body``'s JSON-RPC ``id`` is none the spec allows (a string, an integer or
    ``null``), else ``None``; a body that is not JSON is left to the MCP layer."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    for item in message if isinstance(message, list) else [message]:
        if not isinstance(item, dict) or "id" not in item:
            continue
        ident = item["id"]
        if ident is None or isinstance(ident, str):
            continue
        if isinstance(ident, int) and not isinstance(ident, bool):
            continue
        return f"Invalid Request: id must be a string, an integer or null, not {ident!r:.40}"
    return None


async def _reply_rpc_error(send: Any, message: str) -> None:
    """A JSON-RPC Invalid Request (-32600) with ``id`` null, status 400."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    body = json.dumps(error).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _gone(path: str, why: str) -> None:
    from goat_core.logs import get_logger

    get_logger(__name__).info("serve.client_gone", path=path, why=why)


def _is_disconnect(exc: BaseException) -> bool:
    """Whether ``exc`` (or, in a group, each of its parts) means the client hung up."""
    import anyio
    from starlette.requests import ClientDisconnect

    if isinstance(exc, BaseExceptionGroup):
        return all(_is_disconnect(e) for e in exc.exceptions)
    gone = (ClientDisconnect, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
    return isinstance(exc, gone)


async def _reply(send: Any, status: int, message: str, *, bearer: bool = False) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def run_http(
    *,
    home: GoatHome | None,
    listen: str,
    pens: Sequence[str] = (),
    global_: bool = False,
    origins: Sequence[str] = (),
    token_file: Path | None = None,
    token_from_store: bool = False,
) -> None:
    """Serve the named scopes on ``listen`` until interrupted.

    :raises BadInput: no scope, a bad address, or a non-loopback address without a token.
    :raises CredentialError: the token cannot be read.
    """
    import anyio

    host_name, port = parse_listen(listen)
    if not pens and not global_:
        raise BadInput("--http needs the scopes to serve: --global and/or --pen ID (repeatable)")
    if token_file is not None and token_from_store:
        raise BadInput("give either --token-file or --token-from-store, not both")
    anyio.run(_serve, home, host_name, port, pens, global_, origins, token_file, token_from_store)


async def _serve(
    home: GoatHome | None,
    host_name: str,
    port: int,
    pens: Sequence[str],
    global_: bool,
    origins: Sequence[str],
    token_file: Path | None,
    token_from_store: bool,
) -> None:
    import uvicorn

    from goat_core.plugins import PluginSettings, Registry
    from goat_core.serve._progress import server_host
    from goat_core.serve._scope import resolve_serve_scope
    from goat_core.serve._tools import ServedScope

    registry = Registry.load(PluginSettings.from_env())
    async with server_host(home, registry) as host:
        token: str | None = None
        if token_file is not None:
            token = read_token_file(token_file)
        elif token_from_store:
            from goat_core.host import CredentialStore

            token = CredentialStore(host.home).get(TOKEN_BINDING, TOKEN_NAME)
            if not token:
                raise CredentialError(
                    "no token in the credential store: run goat serve-token --new"
                )
        if not is_loopback(host_name) and token is None:
            raise BadInput(
                f"--http {host_name}:{port} is not loopback: a bearer token is required "
                "(--token-file FILE or --token-from-store)"
            )
        scopes = [resolve_serve_scope(registry, global_=True)] if global_ else []
        scopes += [resolve_serve_scope(registry, pen=p) for p in dict.fromkeys(pens)]
        served_scopes = [ServedScope(host, s) for s in scopes]
        app = ScopedEndpoints(
            served_scopes,
            origins=origins,
            token=token,
            loopback_only=is_loopback(host_name),
        )
        config = uvicorn.Config(
            app,
            host=host_name,
            port=port,
            log_level="warning",
            lifespan="on",
            http=_timed_protocol(),
            limit_concurrency=MAX_CONNECTIONS,
            timeout_keep_alive=int(KEEP_ALIVE_SECONDS),
            timeout_graceful_shutdown=2,
        )
        server = uvicorn.Server(config)
        import sys

        for s in scopes:
            print(f"goat serve: http://{host_name}:{port}{_endpoint(s.scope.key)}", file=sys.stderr)
        import anyio

        from goat_core.serve._local import socket_path
        from goat_core.serve._stdio import quiet_local

        async def local_sockets() -> None:
            # the hooks of this home ask each served scope on its own local socket, until
            # the server begins to exit (uvicorn re-raises a SIGTERM once serve() returns,
            # so the sockets are closed and removed while it shuts down)
            async with anyio.create_task_group() as tg:
                for served in served_scopes:
                    path = socket_path(host.home.data_dir, served.served.scope)
                    if path is not None:
                        tg.start_soon(quiet_local, served, path)
                while not server.should_exit:
                    await anyio.sleep(0.1)
                tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(local_sockets)
            await server.serve()
            tg.cancel_scope.cancel()
