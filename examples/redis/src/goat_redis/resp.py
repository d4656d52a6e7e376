"""A minimal Redis (RESP2) client over the byte stream GOAT's egress guard hands out.

No Redis client library: they open their own sockets, which the guard never sees. This one
speaks just enough RESP for the provider: one connection, one request at a time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from goat_core import AuthError, ProviderUnavailable, StoreUnwritable

Reply = Any  # str | int | bytes | None | list[Reply] | ReplyError
_MAX_LINE = 64 * 1024


class ConnectionLost(ProviderUnavailable):
    """The connection broke after a request was (perhaps partly) sent: it may have run."""


class ReplyError(Exception):
    """An error reply from the server (`-ERR ...`)."""


def encode(args: tuple[str | bytes | int, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode("utf-8")
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


async def read_reply(buf: BufferedByteReceiveStream) -> Reply:
    line = await buf.receive_until(b"\r\n", _MAX_LINE)
    kind, rest = line[:1], line[1:]
    if kind == b"+":
        return rest.decode("utf-8", "replace")
    if kind == b"-":
        return ReplyError(rest.decode("utf-8", "replace"))
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        return None if size < 0 else (await buf.receive_exactly(size + 2))[:-2]
    if kind == b"*":
        size = int(rest)
        return None if size < 0 else [await read_reply(buf) for _ in range(size)]
    raise ValueError(f"not a RESP reply: {line[:20]!r}")


_BROKEN = (
    OSError,
    TimeoutError,
    ValueError,
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.DelimiterNotFound,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
)


class Transport:
    """One lazily opened connection; requests are serialised, a broken one is reopened."""

    def __init__(
        self,
        connect: Callable[..., Awaitable[Any]],
        url: str,
        password: Callable[[], str | None],
        timeout: float = 5.0,
    ) -> None:
        self.url = url
        self._connect = connect
        self._password = password
        self._timeout = timeout
        self._lock = anyio.Lock()
        self._stream: Any = None
        self._buf: BufferedByteReceiveStream | None = None

    async def call(self, *args: str | bytes | int) -> Reply:
        """Send one command and return its reply; error replies raise typed errors."""
        async with self._lock:
            if self._stream is None:
                await self._open()
            reply = await self._roundtrip(args)
        if isinstance(reply, ReplyError):
            raise _typed(reply, self.url)
        return reply

    async def _open(self) -> None:
        try:
            with anyio.fail_after(self._timeout):
                stream = await self._connect(
                    self.url, timeout=self._timeout, tls=self.url.startswith("rediss:")
                )
        except (OSError, TimeoutError) as exc:
            raise ProviderUnavailable(f"cannot connect to {self.url}: {exc}") from None
        self._stream, self._buf = stream, BufferedByteReceiveStream(stream)
        password = self._password()  # read when connecting, never earlier
        if password:
            reply = await self._roundtrip(("AUTH", password))
            if isinstance(reply, ReplyError):
                await self.aclose()
                raise _typed(reply, self.url)

    async def _roundtrip(self, args: tuple[str | bytes | int, ...]) -> Reply:
        assert self._stream is not None and self._buf is not None
        try:
            with anyio.fail_after(self._timeout):
                await self._stream.send(encode(args))
                return await read_reply(self._buf)
        except _BROKEN as exc:
            await self.aclose()
            raise ConnectionLost(f"connection to {self.url} lost: {type(exc).__name__}") from None
        except BaseException:  # cancelled mid-request: a late reply would be misread
            await self.aclose()
            raise

    async def aclose(self) -> None:
        stream, self._stream, self._buf = self._stream, None, None
        if stream is not None:
            await anyio.aclose_forcefully(stream)


def _typed(error: ReplyError, url: str) -> Exception:
    message = str(error)
    code = message.split(" ", 1)[0]
    if code in ("NOAUTH", "WRONGPASS") or message.startswith("ERR AUTH"):
        return AuthError(f"{url} refused the credential: {message}")
    if code == "OOM":
        return StoreUnwritable(f"{url} is out of memory: {message}", path=url, reason="full")
    if code in ("READONLY", "MISCONF", "NOREPLICAS"):
        return StoreUnwritable(f"{url} takes no writes: {message}", path=url, reason="read-only")
    return ProviderUnavailable(f"{url} answered an error: {message}")
