"""The owner-only local socket a running ``goat serve`` offers the hook and ``goat recall``
of the same home.

A hook is a fresh process per prompt; a running server already has the plugins imported,
the index open, an embedder's model loaded and the connection supervisor's state. So
``goat serve`` (stdio, and ``--http`` for each scope it serves) listens on a Unix socket
under the GOAT home (directory 0700, socket 0600), one per scope, and the hook asks it for
the turn's memory block first. One JSON line each way::

    -> {"op": "turn", "scope": "pen:x", "prompt": "...", "budget": 4000}
    <- {"scope": "pen:x", "outcome": "ok", "block": "...", "reason": null, "label": "..."}

``goat recall`` (goat_core/cli/_fast.py) asks for a recall the same way; the answer is the
``RecallResult.to_json()`` form, or an error object whenever the command must run in full::

    -> {"op": "recall", "scope": "pen:x", "query": "...", "limit": 10, "version": "0.1.0",
        "plugins": {"GOAT_LOAD_PLUGINS": null, ...}, "paths": [[sys.path entry, mtime], ...],
        "home": "<config folder>"}
    <- {"scope": "pen:x", "result": {"scope": "pen:x", "items": [...], ...}}

The server answers only for its own scope (anything else: an error object) and never
writes memory here. The hook talks only to this user's owner-only socket in an owner-only
folder, reads at most the budget's worth of reply and gives up at its timeout. No mcp,
pydantic or structlog import.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goat_core.logs import get_logger

if TYPE_CHECKING:
    from goat_core.contract import Scope
    from goat_core.serve._tools import ServedScope

log = get_logger(__name__)

#: The variables that choose which plugins load (goat_core/plugins/_manager.py): a recall is
#: answered only for a command whose values equal the server's, so both see the same hooks.
PLUGIN_ENV = (
    "GOAT_LOAD_PLUGINS",
    "GOAT_DISABLE_PLUGINS",
    "GOAT_STRICT_PLUGINS",
    "GOAT_TRACE_PLUGINS",
)


def plugin_env() -> dict[str, str | None]:
    """This process's values of :data:`PLUGIN_ENV` (``None``: unset)."""
    return {name: os.environ.get(name) for name in PLUGIN_ENV}


def import_paths() -> list[list[Any]]:
    """Each ``sys.path`` folder with its modification time in ns (``None``: missing), as
    ``[[path, mtime], ...]``. Installing or removing a package changes its folder's time, so
    a server started before an install, or with another ``PYTHONPATH``, has other values:
    it may have other plugins, and a recall is answered only for equal values."""
    out: list[list[Any]] = []
    for entry in sys.path:
        try:
            mtime: int | None = os.stat(entry or ".").st_mtime_ns
        except OSError:
            mtime = None
        out.append([entry, mtime])
    return out


#: Largest request line the socket reads (a prompt and its envelope).
MAX_REQUEST_BYTES = 256_000
_MAX_PATH = 100  # sun_path is 108 bytes on Linux, 104 on macOS


def socket_path(data_dir: Path, scope: Scope | str) -> Path | None:
    """Where the server of ``scope`` (a :class:`Scope` or its key) for this home listens:
    under the home's data folder, or, when that path is too long for a Unix socket, in an
    owner-only folder under the runtime or temp directory named by a digest of the home and
    scope (``None``: no safe place)."""
    key = scope if isinstance(scope, str) else scope.key
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    path = data_dir / "run" / f"serve-{name}.sock"
    if len(os.fsencode(path)) <= _MAX_PATH:
        return path
    raw = os.fsencode(data_dir.resolve()) + b"\0" + key.encode()
    digest = hashlib.sha256(raw).hexdigest()[:20]
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir())
    folder = base / f"goat-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None  # someone else's folder, or open to others: no socket there
    path = folder / f"serve-{digest}.sock"
    return path if len(os.fsencode(path)) <= _MAX_PATH else None


def _prepare(path: Path) -> bool:
    """Make the owner-only directory; clear a stale socket. ``False``: one is live."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.parent.stat().st_uid == os.getuid():
        os.chmod(path.parent, 0o700)
    if not path.exists():
        return True
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(0.2)
        probe.connect(str(path))
    except OSError:
        path.unlink(missing_ok=True)  # stale: its server is gone
        return True
    finally:
        probe.close()
    return False  # another server of this scope and home answers; leave it


async def serve_local(served: ServedScope, path: Path, stop: Any = None) -> None:
    """Answer hooks on ``path`` until cancelled or until the ``anyio.Event`` ``stop`` is set
    (returns at once if another server does); removes the socket it made."""
    import anyio

    if not _prepare(path):
        log.info("serve.socket_taken", path=str(path))
        return
    old = os.umask(0o177)
    try:
        listener = await anyio.create_unix_listener(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    inode = path.stat().st_ino
    paths = import_paths()  # the plugins this server loaded came from these

    async def handle(stream: Any) -> None:
        async with stream:
            try:
                with anyio.fail_after(30):
                    data = b""
                    while not data.endswith(b"\n") and len(data) <= MAX_REQUEST_BYTES:
                        chunk = await stream.receive(65536)
                        if not chunk:
                            break
                        data += chunk
                    reply = await _answer(served, data, paths)
                    await stream.send(json.dumps(reply).encode() + b"\n")
            except Exception as exc:  # a hook that hung up or timed out
                log.debug("serve.socket_error", error=type(exc).__name__)

    try:
        async with listener:
            if stop is None:
                await listener.serve(handle)
            else:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(listener.serve, handle)
                    await stop.wait()
                    tg.cancel_scope.cancel()
    finally:
        with contextlib.suppress(OSError):
            if path.stat().st_ino == inode:
                path.unlink()


async def _answer(
    served: ServedScope, data: bytes, paths: list[list[Any]] | None = None
) -> dict[str, Any]:
    if len(data) > MAX_REQUEST_BYTES:
        return {"error": "request too large"}
    try:
        request = json.loads(data)
    except ValueError:
        return {"error": "not JSON"}
    scope = served.served.scope
    if not isinstance(request, dict) or request.get("op") not in ("turn", "recall"):
        return {"error": "unknown request"}
    if request.get("scope") != scope.key:
        return {"error": f"this server serves {scope.key}, not {request.get('scope')}"}
    if request["op"] == "recall":
        return await _recall(served, request, paths)
    prompt, budget = request.get("prompt"), request.get("budget")
    if not isinstance(prompt, str) or not isinstance(budget, int) or budget < 0:
        return {"error": "bad prompt or budget"}
    turn = await served.context().prepare_turn(prompt, budget)
    return {
        "scope": scope.key,
        "outcome": turn.outcome,
        "block": turn.block,
        "reason": turn.reason,
        "label": turn.label,
        "degraded": list(turn.degraded),
    }


async def _recall(
    served: ServedScope, request: dict[str, Any], paths: list[list[Any]] | None
) -> dict[str, Any]:
    """``goat recall``'s answer: the recall result's JSON form, or an error object for
    anything the command run in full must report itself (a bad query or limit, an
    unavailable scope, a refused read, another version of goat, another config folder,
    other plugin variables or import paths: :func:`import_paths` as this server started)."""
    from goat_core._version import __version__
    from goat_core.errors import GoatError

    query, limit = request.get("query"), request.get("limit")
    if request.get("version") != __version__:
        return {"error": f"this server runs goat {__version__}"}
    if request.get("plugins") != plugin_env():
        return {"error": "this server loads plugins with other GOAT_*_PLUGINS values"}
    if request.get("paths") != paths:
        return {"error": "this server imports from other paths, or from before an install"}
    if request.get("home") != str(served.host.home.config_dir):
        return {"error": "this server reads another config folder"}
    if not isinstance(query, str) or type(limit) is not int:
        return {"error": "bad query or limit"}
    try:
        result = await served.context().recall(query, limit=limit)
    except GoatError as exc:
        log.debug("serve.socket_recall", outcome="refused", error=type(exc).__name__)
        return {"error": type(exc).__name__}
    log.debug("serve.socket_recall", outcome="answered", items=len(result.items))
    return {"scope": served.served.scope.key, "result": result.to_json()}


#: Largest reply the hook reads: the block (at most ``budget`` characters, each at most 12
#: bytes once JSON-escaped) plus this much for the envelope.
REPLY_ENVELOPE_BYTES = 64_000


def check_socket(path: Path) -> None:
    """Refuse a socket the hook must not talk to: not a socket, not this user's, or open to
    others (the socket or its folder).

    :raises PermissionError: it is not an owner-only socket of this user.
    :raises OSError: it cannot be inspected (e.g. it vanished).
    """
    info = path.lstat()
    folder = path.parent.lstat()
    uid = os.getuid()
    if not stat.S_ISSOCK(info.st_mode):
        raise PermissionError(f"{path} is not a socket")
    if info.st_uid != uid or folder.st_uid != uid:
        raise PermissionError(f"{path} belongs to another user")
    if info.st_mode & 0o077 or folder.st_mode & 0o077:
        raise PermissionError(f"{path} is open to other users (not owner-only)")


def _exchange(path: Path, request: dict[str, Any], timeout: float, limit: int) -> Any:
    """Send ``request`` as one JSON line to the owner-only socket ``path`` and read one JSON
    line back, all within ``timeout`` seconds and ``limit`` bytes (blocking).

    :raises OSError: no server listens, the socket is not owner-only (``PermissionError``),
        or it did not answer within ``timeout`` (``TimeoutError``).
    :raises ValueError: the answer is over ``limit`` bytes or not JSON.
    """
    import time

    check_socket(path)
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(str(path))
        conn.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no whole answer within {timeout:g} s")
            conn.settimeout(left)
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
            if len(data) > limit:
                raise ValueError(f"the answer is over {limit} bytes")
    return json.loads(data)


def _refused(reply: Any, scope_key: str) -> None:
    """:raises ValueError: ``reply`` is an error object or answers for another scope."""
    if not isinstance(reply, dict) or "error" in reply or reply.get("scope") != scope_key:
        why = reply.get("error") if isinstance(reply, dict) else reply
        raise ValueError(f"the running server refused: {str(why)[:200]}")


def ask_local(path: Path, scope: Scope, prompt: str, budget: int, timeout: float) -> dict[str, Any]:
    """Ask the server on ``path`` for a turn's block (the hook side; blocking). The socket
    must be this user's and owner-only (:func:`check_socket`); the whole exchange must end
    within ``timeout`` and the reply stay within the budget's size.

    :raises OSError: no server listens, the socket is not owner-only (``PermissionError``),
        or it did not answer within ``timeout`` (``TimeoutError``).
    :raises ValueError: an unusable answer (not JSON, an error, another scope, too large).
    """
    request = {"op": "turn", "scope": scope.key, "prompt": prompt, "budget": budget}
    reply = _exchange(path, request, timeout, REPLY_ENVELOPE_BYTES + 12 * budget)
    _refused(reply, scope.key)
    if not isinstance(reply.get("block"), str) or not isinstance(reply.get("outcome"), str):
        raise ValueError("the answer has no block or outcome")
    return dict(reply)


#: Largest recall answer read (100 items with their fuller text fit many times over).
MAX_RECALL_REPLY_BYTES = 64_000_000


def ask_recall(
    path: Path,
    scope_key: str,
    query: str,
    limit: int,
    version: str,
    timeout: float,
    home: str,
) -> dict[str, Any]:
    """Ask the server on ``path`` for a recall (``goat recall``'s fast path; blocking): the
    ``RecallResult.to_json()`` form of its answer. ``home``: the config folder of the
    command's GOAT home (the server must read the same bindings).

    :raises OSError: as :func:`ask_local`.
    :raises ValueError: an unusable answer (not JSON, an error, another scope, too large,
        no result).
    """
    request = {
        "op": "recall",
        "scope": scope_key,
        "query": query,
        "limit": limit,
        "version": version,
        "plugins": plugin_env(),
        "paths": import_paths(),
        "home": home,
    }
    reply = _exchange(path, request, timeout, MAX_RECALL_REPLY_BYTES)
    _refused(reply, scope_key)
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("scope") != scope_key:
        raise ValueError("the answer has no result of this scope")
    return result
