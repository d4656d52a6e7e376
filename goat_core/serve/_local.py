"""The owner-only local socket a running ``goat serve`` offers the hook of the same home.

A hook is a fresh process per prompt; a running server already has the plugins imported,
the index open, an embedder's model loaded and the connection supervisor's state. So
``goat serve`` (stdio, and ``--http`` for each scope it serves) listens on a Unix socket
under the GOAT home (directory 0700, socket 0600), one per scope, and the hook asks it for
the turn's memory block first. One JSON line each way::

    -> {"op": "turn", "scope": "pen:x", "prompt": "...", "budget": 4000}
    <- {"scope": "pen:x", "outcome": "ok", "block": "...", "reason": null, "label": "..."}

The server answers only for its own scope (anything else: an error object) and never
writes memory here. The hook talks only to this user's owner-only socket in an owner-only
folder, reads at most the budget's worth of reply and gives up at its timeout. No mcp
import.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goat_core.logs import get_logger

if TYPE_CHECKING:
    from goat_core.contract import Scope
    from goat_core.serve._tools import ServedScope

log = get_logger(__name__)

#: Largest request line the socket reads (a prompt and its envelope).
MAX_REQUEST_BYTES = 256_000
_MAX_PATH = 100  # sun_path is 108 bytes on Linux, 104 on macOS


def socket_path(data_dir: Path, scope: Scope) -> Path | None:
    """Where the server of ``scope`` for this home listens: under the home's data folder,
    or, when that path is too long for a Unix socket, in an owner-only folder under the
    runtime or temp directory named by a digest of the home and scope (``None``: no safe
    place)."""
    name = hashlib.sha256(scope.key.encode()).hexdigest()[:16]
    path = data_dir / "run" / f"serve-{name}.sock"
    if len(os.fsencode(path)) <= _MAX_PATH:
        return path
    key = hashlib.sha256(f"{data_dir.resolve()}\0{scope.key}".encode()).hexdigest()[:20]
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir())
    folder = base / f"goat-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None  # someone else's folder, or open to others: no socket there
    path = folder / f"serve-{key}.sock"
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
                    reply = await _answer(served, data)
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


async def _answer(served: ServedScope, data: bytes) -> dict[str, Any]:
    if len(data) > MAX_REQUEST_BYTES:
        return {"error": "request too large"}
    try:
        request = json.loads(data)
    except ValueError:
        return {"error": "not JSON"}
    scope = served.served.scope
    if not isinstance(request, dict) or request.get("op") != "turn":
        return {"error": "unknown request"}
    if request.get("scope") != scope.key:
        return {"error": f"this server serves {scope.key}, not {request.get('scope')}"}
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


def ask_local(path: Path, scope: Scope, prompt: str, budget: int, timeout: float) -> dict[str, Any]:
    """Ask the server on ``path`` for a turn's block (the hook side; blocking). The socket
    must be this user's and owner-only (:func:`check_socket`); the whole exchange must end
    within ``timeout`` and the reply stay within the budget's size.

    :raises OSError: no server listens, the socket is not owner-only (``PermissionError``),
        or it did not answer within ``timeout`` (``TimeoutError``).
    :raises ValueError: an unusable answer (not JSON, an error, another scope, too large).
    """
    import time

    check_socket(path)
    limit = REPLY_ENVELOPE_BYTES + 12 * budget
    deadline = time.monotonic() + timeout
    request = {"op": "turn", "scope": scope.key, "prompt": prompt, "budget": budget}
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
    reply = json.loads(data)
    if not isinstance(reply, dict) or "error" in reply or reply.get("scope") != scope.key:
        why = reply.get("error") if isinstance(reply, dict) else reply
        raise ValueError(f"the running server refused: {str(why)[:200]}")
    if not isinstance(reply.get("block"), str) or not isinstance(reply.get("outcome"), str):
        raise ValueError("the answer has no block or outcome")
    return reply
