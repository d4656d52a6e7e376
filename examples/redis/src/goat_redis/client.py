"""One redis-py connection per provider, opened only after GOAT's egress guard allowed it.

redis-py opens its own socket. So every connect first calls ``context.authorize(url)``: a
refusal (before setup, or a veto) raises before any byte leaves the process. Retries are
off: a write that redis-py re-sent after a lost answer could land twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from redis.asyncio.connection import Connection, SSLConnection
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, OutOfMemoryError, ReadOnlyError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from goat_core import AuthError, ProviderUnavailable, StoreUnwritable


class ConnectionLost(ProviderUnavailable):
    """The connection broke after a request was (perhaps partly) sent: it may have run."""


_BROKEN = (OSError, RedisConnectionError, RedisTimeoutError, TimeoutError)


class Transport:
    """One lazily opened connection; requests are serialised, a broken one is reopened.

    :param authorize: ``await authorize(url) -> Endpoint`` (``context.authorize``).
    :param password: ``password() -> str | None``, read when connecting, never earlier.
    """

    def __init__(
        self,
        authorize: Callable[[str], Awaitable[Any]],
        url: str,
        password: Callable[[], str | None],
        timeout: float = 5.0,
    ) -> None:
        self.url = url
        self._authorize = authorize
        self._password = password
        self._timeout = timeout
        self.lock = anyio.Lock()
        self.connection: Connection | None = None

    def __repr__(self) -> str:
        return f"Transport({self.url!r})"

    async def call(self, *args: str | bytes | int) -> Any:
        """Send one command and return its reply; error replies raise typed errors.

        :raises ProviderUnavailable: refused by the egress guard, or no connection (nothing
            was sent). :raises ConnectionLost: the connection broke once the request was
            (perhaps) sent. :raises AuthError: the server refused the credential.
        """
        async with self.lock:
            connection = await self.opened()
            return await self.roundtrip(connection, args)

    async def opened(self) -> Connection:
        """The open connection, connecting first (the egress guard is asked each time)."""
        if self.connection is not None:
            return self.connection
        endpoint = await self._authorize(self.url)
        kind = SSLConnection if endpoint.scheme == "rediss" else Connection
        connection = kind(
            host=endpoint.host,
            port=endpoint.port,
            password=self._password(),
            socket_timeout=self._timeout,
            socket_connect_timeout=self._timeout,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            protocol=2,  # the replies the scripts were written for (RESP2 arrays, nil)
        )
        try:
            await connection.connect()
        except AuthenticationError as exc:
            await connection.disconnect()
            raise AuthError(f"{self.url} refused the credential: {exc}") from None
        except ResponseError as exc:
            await connection.disconnect()
            raise typed(exc, self.url) from None
        except _BROKEN as exc:
            await connection.disconnect()
            raise ProviderUnavailable(f"cannot connect to {self.url}: {_why(exc)}") from None
        self.connection = connection
        return connection

    async def roundtrip(self, connection: Connection, args: tuple[str | bytes | int, ...]) -> Any:
        try:
            await connection.send_command(*args)
            return await connection.read_response()
        except (ResponseError, AuthenticationError) as exc:  # AuthenticationError is a
            raise typed(exc, self.url) from None  # ConnectionError in redis-py
        except _BROKEN as exc:
            await self.aclose()
            raise ConnectionLost(f"connection to {self.url} lost: {type(exc).__name__}") from None
        except BaseException:  # cancelled mid-request: a late reply would be misread
            await self.aclose()
            raise

    async def aclose(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await connection.disconnect(nowait=True)


def _why(exc: BaseException) -> str:
    """redis-py's words without its repr of the connection."""
    text = str(exc) or type(exc).__name__
    return text.split(". ", 1)[-1] if text.startswith("Error ") else text


def typed(error: ResponseError, url: str) -> Exception:
    """A typed GOAT error for an error reply (redis-py drops the code of the replies it
    knows, so those are told by class)."""
    message = str(error)
    code = message.split(" ", 1)[0]
    if isinstance(error, AuthenticationError) or code in ("NOAUTH", "WRONGPASS"):
        return AuthError(f"{url} refused the credential: {message}")
    if isinstance(error, OutOfMemoryError) or code == "OOM":
        return StoreUnwritable(f"{url} is out of memory: {message}", path=url, reason="full")
    if isinstance(error, ReadOnlyError) or code in ("READONLY", "MISCONF", "NOREPLICAS"):
        return StoreUnwritable(f"{url} takes no writes: {message}", path=url, reason="read-only")
    return ProviderUnavailable(f"{url} answered an error: {message}")
