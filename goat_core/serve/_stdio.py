"""``goat serve`` on stdio: nothing but protocol on stdout.

Before any plugin is imported, file descriptor 1 is pointed at stderr (and ``sys.stdout``
at ``sys.stderr``), so a plugin that prints, at import time or later, cannot break the
protocol; the protocol goes to a private duplicate of the original stdout. Logs go to
stderr. mcp, the plugins and the host are imported only after that, and no index work is
done before the first call.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goat_core.host import GoatHome


def divert_stdout() -> int:
    """Point fd 1 and ``sys.stdout`` at stderr; return a duplicate of the original stdout.
    Started with stdout closed (``>&-``), what goes to the returned descriptor is dropped
    (``os.devnull``): there is no one to answer."""
    if sys.stdout is not None:
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # fd 1 is closed: a descriptor above 2 on os.devnull (never fd 1 itself)
        import fcntl

        null = os.open(os.devnull, os.O_WRONLY)
        saved = fcntl.fcntl(null, fcntl.F_DUPFD_CLOEXEC, 3)
        os.close(null)
    with contextlib.suppress(OSError):  # fd 2 closed too: fd 1 stays as it is
        os.dup2(2, 1)
    sys.stdout = sys.stderr
    return saved


def run_stdio(
    *,
    home: GoatHome | None,
    pen: str | None = None,
    global_: bool = False,
    from_dir: str | None = None,
    pin: str | None = None,
    protocol_fd: int | None = None,
    local_socket: bool = True,
) -> None:
    """Serve one scope on stdio until the client closes stdin.

    :param protocol_fd: where protocol messages go (default: divert stdout now and use the
        original). :param local_socket: also answer hooks of this home on its local socket.
    :raises GoatError: the scope cannot be resolved (before anything is served).
    """
    if protocol_fd is None:
        protocol_fd = divert_stdout()
    import anyio

    anyio.run(_serve, home, pen, global_, from_dir, pin, protocol_fd, local_socket)


async def _serve(
    home: GoatHome | None,
    pen: str | None,
    global_: bool,
    from_dir: str | None,
    pin: str | None,
    protocol_fd: int,
    local_socket: bool,
) -> None:
    import anyio

    from goat_core.serve._sdk import lean_import

    lean_import()  # the low-level server only: not the client, not MCPServer
    from mcp.server.stdio import stdio_server

    from goat_core.logs import get_logger
    from goat_core.plugins import PluginSettings, Registry
    from goat_core.serve._local import socket_path
    from goat_core.serve._progress import server_host
    from goat_core.serve._scope import bound_projects, resolve_serve_scope
    from goat_core.serve._server import build_server
    from goat_core.serve._tools import ServedScope

    log = get_logger(__name__)
    registry = Registry.load(PluginSettings.from_env())
    out = io.TextIOWrapper(
        os.fdopen(protocol_fd, "wb", buffering=0), encoding="utf-8", write_through=True
    )
    stdout: Any = anyio.wrap_file(out)
    async with server_host(home, registry) as host:
        served_scope = resolve_serve_scope(
            registry,
            pen=pen,
            global_=global_,
            from_dir=from_dir,
            pin=pin,
            bound=bound_projects(host.home),
        )
        served = ServedScope(host, served_scope)
        server = build_server(served)
        if not gc.isenabled():  # `goat serve` paused it for start-up (goat_core.cli)
            gc.freeze()  # what start-up made lives as long as the server: never scan it
            gc.enable()
        log.info("serve.start", scope=served_scope.scope.key, how=served_scope.how)
        async with anyio.create_task_group() as tg:
            # a GOAT home that does not exist gets no socket: serving never creates one
            exists = host.home.config_dir.is_dir() or host.home.data_dir.is_dir()
            path = (
                socket_path(host.home.data_dir, served_scope.scope)
                if local_socket and exists
                else None
            )
            stop, stopped = anyio.Event(), anyio.Event()
            if path is not None:
                tg.start_soon(quiet_local, served, path, stop, stopped)
            else:
                stopped.set()
            tg.start_soon(_stop_on_signal, stop, stopped)
            async with (
                stdio_server(stdout=stdout) as (read_stream, write_stream),
                answered_before_eof(read_stream, write_stream) as (reads, writes),
            ):
                await server.run(reads, writes, server.create_initialization_options())
            tg.cancel_scope.cancel()


#: How long the end of stdin waits for answers to requests already read (seconds).
DRAIN_SECONDS = 10.0


@contextlib.asynccontextmanager
async def answered_before_eof(
    read_stream: Any, write_stream: Any, grace: float = DRAIN_SECONDS
) -> AsyncIterator[tuple[Any, Any]]:
    """Streams for the server in which the end of stdin waits until every request read
    has its answer written (at most ``grace`` seconds).

    Without this, a client that writes its requests and closes stdin (``printf ... | goat
    serve``) lost the answers still being computed: the SDK ends the session at EOF.
    Requests are counted by id (an id sent twice waits for two answers); a request the
    client cancelled (``notifications/cancelled``) is not waited for. Answers still due when
    the grace ends are logged (``serve.eof_unanswered``), never dropped in silence.
    Yields ``(reads, writes)``: memory streams relayed to and from the transport's.
    """
    from collections import Counter

    import anyio

    from goat_core.logs import get_logger

    pending: Counter[Any] = Counter()
    idle, done = anyio.Event(), anyio.Event()
    idle.set()
    to_server, reads = anyio.create_memory_object_stream[Any](16)
    writes, from_server = anyio.create_memory_object_stream[Any](16)

    def settle(request_id: Any) -> None:
        if pending[request_id] > 0:
            pending[request_id] -= 1
        if pending[request_id] <= 0:
            del pending[request_id]
        if not pending:
            idle.set()

    async def inbound() -> None:
        nonlocal idle
        async with to_server:
            async for item in read_stream:
                message: Any = getattr(item, "message", None)
                method = getattr(message, "method", None)
                if method is not None and hasattr(message, "id"):
                    pending[message.id] += 1
                    if idle.is_set():
                        idle = anyio.Event()
                elif method == "notifications/cancelled":
                    params = getattr(message, "params", None) or {}
                    settle(params.get("requestId") if isinstance(params, dict) else None)
                await to_server.send(item)
            with anyio.move_on_after(grace):
                await idle.wait()
            if pending:
                get_logger(__name__).warning(
                    "serve.eof_unanswered", requests=sum(pending.values()), grace_s=grace
                )

    async def outbound() -> None:
        async with from_server, write_stream:
            async for item in from_server:
                await write_stream.send(item)
                message = getattr(item, "message", None)
                if getattr(message, "method", None) is None:  # an answer, now written
                    settle(getattr(message, "id", None))
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(inbound)
        tg.start_soon(outbound)
        yield reads, writes
        with anyio.move_on_after(grace):  # what the server wrote is relayed whole
            await done.wait()
        tg.cancel_scope.cancel()


async def _stop_on_signal(stop: Any, stopped: Any) -> None:
    """On SIGTERM or SIGINT, close and remove the local socket, then end as that signal's
    default action would. The MCP side reads stdin in a thread that no cancellation can
    stop, so without this SIGINT was ignored (a host then waits, and sends SIGTERM)."""
    import signal

    import anyio

    received = signal.SIGTERM
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            received = signal.Signals(signum)
            break
    stop.set()
    with anyio.move_on_after(2):
        await stopped.wait()
    signal.signal(received, signal.SIG_DFL)
    os.kill(os.getpid(), received)


async def quiet_local(served: Any, path: Any, stop: Any = None, stopped: Any = None) -> None:
    """:func:`~goat_core.serve._local.serve_local` (until ``stop`` is set; ``stopped`` is
    set once it returned), a failure only logged (the hook then recalls in its own
    process)."""
    from goat_core.logs import get_logger
    from goat_core.serve._local import serve_local

    try:
        await serve_local(served, path, stop)
    except OSError as exc:  # the hook falls back to its own process
        get_logger(__name__).warning("serve.socket_unavailable", error=str(exc))
    finally:
        if stopped is not None:
            stopped.set()
