"""One psycopg connection per provider, opened only after GOAT's egress guard allowed it.

psycopg (libpq, in C) opens its own socket. So every connect first calls
``context.authorize(url)`` and connects to exactly the host and port it returns: a refusal
raises before any byte leaves the process. Nothing is retried: a write re-sent after a lost
answer could land twice.

Every write is one transaction: ``BEGIN``, its statements, ``COMMIT``. A connection lost
before ``COMMIT`` was sent rolls the transaction back on the server, so nothing landed
(``ProviderUnavailable``). A connection lost once ``COMMIT`` was sent may or may not have
committed (``ConnectionLost``, which the provider reports as ``unknown``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

import anyio
import psycopg
from psycopg import errors as pg_errors

from goat_core import (
    AuthError,
    BadInput,
    CredentialError,
    NotFound,
    ProviderUnavailable,
    StoreUnwritable,
)

T = TypeVar("T")


class ConnectionLost(ProviderUnavailable):
    """The connection broke once COMMIT was (perhaps) sent: the write may have landed."""


class FaultHook(Protocol):
    """A test seam: awaited before every request on the connection (see tests/pg_faults.py)."""

    async def __call__(
        self, connection: psycopg.AsyncConnection[Any], what: str, sql: str, params: Sequence[Any]
    ) -> None: ...


# The session every request runs in. synchronous_commit=on: COMMIT answers only once the
# commit record is flushed to disk, so a committed write is durable when we say "stored".
_SESSION = (
    "SET synchronous_commit TO on",
    "SET statement_timeout TO '10s'",
    "SET lock_timeout TO '10s'",
    "SET idle_in_transaction_session_timeout TO '30s'",
)
# A path that holds no file: libpq then reads no ~/.pgpass (os.devnull makes it warn).
_NO_PASSFILE = "/nonexistent/goat-postgres/pgpass"
_AUTH_STATES = ("28P01", "28000")  # invalid_password, invalid_authorization_specification


class Transport:
    """One lazily opened connection; requests are serialised, a broken one is reopened.

    :param authorize: ``await authorize(url) -> Endpoint`` (``context.authorize``).
    :param password: ``password() -> str | None``, read when connecting, never earlier.
    """

    def __init__(
        self,
        authorize: Callable[[str], Awaitable[Any]],
        url: str,
        *,
        database: str,
        user: str,
        sslmode: str,
        password: Callable[[], str | None],
        timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.database = database
        self.user = user
        self.sslmode = sslmode
        self._authorize = authorize
        self._password = password
        self.timeout = timeout
        self.lock = anyio.Lock()
        self.connection: psycopg.AsyncConnection[Any] | None = None
        self.server: dict[str, str] = {}  # fsync, server_encoding, synchronous_commit
        self.fault: FaultHook | None = None

    def __repr__(self) -> str:
        return f"Transport({self.url!r}, database={self.database!r})"

    # -- connecting ---------------------------------------------------------------------

    async def opened(self) -> psycopg.AsyncConnection[Any]:
        """The open connection, connecting first (the egress guard is asked each time)."""
        if self.connection is not None and not self.connection.closed:
            return self.connection
        self.connection = None
        endpoint = await self._authorize(self.url)
        # No credential: an empty password, so libpq never falls back to PGPASSWORD (and with
        # passfile=_NO_PASSFILE never to ~/.pgpass). trust, peer and cert servers need none.
        password = self._password() or ""
        # Errors are raised outside the ``except`` blocks: psycopg's exception carries the
        # connection's parameters (the password among them), and a GOAT error raised inside
        # the block would keep it as its ``__context__``.
        error: Exception | None = None
        try:
            with anyio.fail_after(self.timeout + 1):
                connection = await psycopg.AsyncConnection.connect(
                    host=endpoint.host,
                    port=endpoint.port,
                    dbname=self.database,
                    user=self.user,
                    password=password,
                    sslmode=self.sslmode,
                    gssencmode="disable",
                    passfile=_NO_PASSFILE,  # the password comes from GOAT only, never ~/.pgpass
                    connect_timeout=max(2, int(self.timeout)),
                    application_name="goat-postgres",
                    autocommit=True,
                )
        except TimeoutError:
            error = ProviderUnavailable(
                f"cannot connect to {self.url}: no answer within {self.timeout:g} s"
            )
        except psycopg.Error as exc:
            error = self._connect_error(exc)
        del password
        if error is not None:
            raise error
        try:
            async with connection.cursor() as cur:
                for statement in _SESSION:
                    await cur.execute(statement)
                await cur.execute(
                    "SELECT current_setting('fsync'), current_setting('server_encoding'),"
                    " current_setting('synchronous_commit')"
                )
                fsync, encoding, sync = await cur.fetchone()  # type: ignore[misc]
        except (psycopg.Error, TimeoutError) as exc:
            error = ProviderUnavailable(f"{self.url} broke while setting up: {_why(exc)}")
        if error is not None:
            await connection.close()
            raise error
        self.server = {"fsync": fsync, "server_encoding": encoding, "synchronous_commit": sync}
        self.connection = connection
        return connection

    def _connect_error(self, exc: psycopg.Error) -> Exception:
        message = _why(exc)
        state = getattr(exc, "sqlstate", None)
        if "no password supplied" in message:
            return CredentialError(
                f"{self.url} asks {self.user!r} for a password, and the `password` credential "
                "is not set (goat bind ... --credential-stdin)"
            )
        if state in _AUTH_STATES or "password authentication failed" in message:
            return AuthError(f"{self.url} refused the credential of {self.user!r}")
        if state == "3D000" or (f'database "{self.database}" does not exist' in message):
            return NotFound(f"{self.url} has no database {self.database!r}")
        return ProviderUnavailable(f"cannot connect to {self.url}: {message}")

    # -- requests -----------------------------------------------------------------------

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read (autocommit) and return its rows."""
        async with self.lock:
            connection = await self.opened()
            try:
                return await self._run(connection, "read", sql, params)
            except psycopg.Error as exc:
                lost = connection.closed or connection.broken
                error = self._typed(connection, exc)
            except TimeoutError:
                lost = True
                error = ProviderUnavailable(f"{self.url} did not answer within {self.timeout:g} s")
            except BaseException:
                await self.aclose()  # cancelled mid-request: a late reply would be misread
                raise
            if lost:
                await self.aclose()
            raise error

    async def write(self, steps: Callable[[Tx], Awaitable[T]]) -> T:
        """Run ``steps`` in one transaction and commit it.

        :raises ConnectionLost: the connection broke once COMMIT was sent (it may have run).
        :raises ProviderUnavailable: anything else that broke; nothing was committed.
        """
        async with self.lock:
            connection = await self.opened()
            committing = False
            error: Exception | None = None
            try:
                await self._run(connection, "write", "BEGIN", ())
                result = await steps(Tx(self, connection))
                committing = True
                await self._run(connection, "commit", "COMMIT", ())
                return result
            except psycopg.Error as exc:
                lost = connection.closed or connection.broken
                if lost and committing:
                    error = ConnectionLost(
                        f"connection to {self.url} lost during COMMIT: the write may or may "
                        "not have landed"
                    )
                elif lost:
                    error = ProviderUnavailable(
                        f"connection to {self.url} lost before COMMIT ({_why(exc)}); "
                        "nothing was stored"
                    )
                else:
                    error = typed(exc, self.url)
            except TimeoutError:  # closing the connection rolls back an open transaction
                lost = True
                if committing:
                    error = ConnectionLost(
                        f"{self.url} did not answer COMMIT within {self.timeout:g} s: the "
                        "write may or may not have landed"
                    )
                else:
                    error = ProviderUnavailable(
                        f"{self.url} did not answer within {self.timeout:g} s; nothing was stored"
                    )
            except Exception:
                await self._rollback(connection)  # our own refusal (NotFound, Ambiguous)
                raise
            except BaseException:
                await self.aclose()  # cancelled mid-request: a late reply would be misread
                raise
            if lost:
                await self.aclose()
            else:
                await self._rollback(connection)
            raise error

    async def _run(
        self,
        connection: psycopg.AsyncConnection[Any],
        what: str,
        sql: str,
        params: Sequence[Any],
    ) -> list[tuple[Any, ...]]:
        if self.fault is not None:
            await self.fault(connection, what, sql, params)
        with anyio.fail_after(self.timeout + 5):  # the server's statement_timeout comes first
            async with connection.cursor() as cur:
                await cur.execute(sql, params or None)  # type: ignore[arg-type]
                return await cur.fetchall() if cur.description is not None else []

    async def _rollback(self, connection: psycopg.AsyncConnection[Any]) -> None:
        try:
            await connection.execute("ROLLBACK")
        except psycopg.Error:
            await self.aclose()

    def _typed(self, connection: psycopg.AsyncConnection[Any], exc: psycopg.Error) -> Exception:
        if connection.closed or connection.broken:
            return ProviderUnavailable(f"connection to {self.url} lost: {_why(exc)}")
        return typed(exc, self.url)

    async def aclose(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            with anyio.move_on_after(2, shield=True):
                await connection.close()


class Tx:
    """The statements of one write transaction."""

    def __init__(self, transport: Transport, connection: psycopg.AsyncConnection[Any]) -> None:
        self._transport = transport
        self._connection = connection

    async def execute(
        self, sql: str, params: Sequence[Any] = (), *, changes: bool = False
    ) -> list[tuple[Any, ...]]:
        """Run one statement of the write; ``changes`` marks the one that changes the store
        (it carries the text of a remember)."""
        what = "change" if changes else "write"
        return await self._transport._run(self._connection, what, sql, params)


def _why(exc: BaseException) -> str:
    """psycopg's first line, without libpq's repeated "connection to server at" preamble."""
    text = (str(exc) or type(exc).__name__).strip().splitlines()[0]
    return text.split(" failed: ", 1)[-1] if text.startswith("connection ") else text


def typed(error: psycopg.Error, url: str) -> Exception:
    """A typed GOAT error for an error the server answered."""
    state = getattr(error, "sqlstate", None) or ""
    message = _why(error)
    if isinstance(error, pg_errors.ReadOnlySqlTransaction) or state == "25006":
        return StoreUnwritable(
            f"{url} takes no writes ({message}); nothing was stored", path=url, reason="read-only"
        )
    if state in ("53100", "53200"):  # disk_full, out_of_memory
        return StoreUnwritable(
            f"{url} is full ({message}); nothing was stored", path=url, reason="full"
        )
    if state in _AUTH_STATES or state == "42501":
        return AuthError(f"{url} refused the operation: {message}")
    if state.startswith("22") or isinstance(error, psycopg.DataError):  # a NUL, an encoding
        return BadInput(f"{url} refused the text: {message}; nothing was stored")
    return ProviderUnavailable(f"{url} answered an error: {message}")
