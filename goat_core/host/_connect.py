"""Guarded network connections for providers that do not speak HTTP (Redis, PostgreSQL, gRPC).

A provider that declares ``network=True`` gets ``context.connect``: ``await
context.connect("redis://127.0.0.1:6379")`` asks the egress guard (``goat_authorize_egress``
through the registry, the same decision as every HTTP request) and only then opens a TCP
stream to the URL's host and port. A provider whose driver opens its own sockets (asyncpg,
redis-py) calls ``await context.authorize(url)`` before each connect of the driver instead.
A refused URL never reaches the network: the call raises
:class:`~goat_core.errors.ProviderUnavailable` naming the URL without credentials. The check
runs on every connect, so a provider that reconnects is asked again.

Every allowed connection (and every allowed HTTP request, see ``goat_core.host._egress``)
raises the audit event ``goat.egress.allowed`` with the URL, so a test harness (the
conformance suite's socket audit) can tell a connection that passed the guard from one that
did not.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from goat_core.errors import BadInput, ProviderUnavailable

if TYPE_CHECKING:
    import ssl

    from anyio.abc import ByteStream

#: The audit event raised for every connection or request the egress guard allowed.
ALLOWED_EVENT = "goat.egress.allowed"


def announce_allowed(url: str) -> None:
    """Tell audit hooks that the egress guard allowed ``url`` (``sys.audit``; costs nothing
    when no hook listens)."""
    sys.audit(ALLOWED_EVENT, url)


def split_endpoint(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of ``url``; each is required.

    :raises BadInput: a URL without a scheme, a host or a port.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # its text may quote a password the user did not escape
        raise BadInput(
            "cannot connect to an invalid URL: its host or port does not parse (escape "
            "'#', '/' and '?' in it, and keep credentials out of it)"
        ) from None
    if not parts.scheme or not parts.hostname or port is None:
        raise BadInput(
            "a guarded connection needs a URL with scheme, host and port "
            "(e.g. redis://127.0.0.1:6379)"
        )
    return parts.scheme.lower(), parts.hostname, port


class Endpoint(NamedTuple):
    """Where an authorized URL points: ``scheme`` lowercased, ``host`` without brackets."""

    scheme: str
    host: str
    port: int


class GuardedConnect:
    """``await connect(url, *, timeout=10.0, tls=None) -> anyio.abc.ByteStream``.

    :param check: ``check(url)`` raises :class:`ProviderUnavailable` when the egress guard
        refuses ``url`` (the host passes ``goat_core.host.check_egress`` bound to the
        registry and the binding).
    """

    def __init__(self, check: Callable[[str], None]) -> None:
        self._check = check

    def __repr__(self) -> str:
        return "GuardedConnect()"

    async def authorize(self, url: str) -> Endpoint:
        """Ask the egress guard for ``url``, for a driver that opens its own sockets
        (asyncpg, psycopg, redis-py): call it before every connect of the driver.

        :returns: the URL's ``Endpoint(scheme, host, port)``: connect the driver to exactly
            that host and port. :raises ProviderUnavailable: refused (before setup, or a
            veto). :raises BadInput: the URL has no scheme, host or port.
        """
        scheme, host, port = split_endpoint(url)
        self._check(url)
        announce_allowed(url)
        return Endpoint(scheme, host, port)

    async def __call__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        tls: ssl.SSLContext | bool | None = None,
        **options: Any,
    ) -> ByteStream:
        """Open a TCP stream to ``url``'s host and port once the egress guard allowed it.

        :param url: ``scheme://host:port[/path]``; the scheme and path take part in the
            egress decision only (``rediss://``, ``postgresql://``, ``grpc://``...).
        :param timeout: seconds for the connect; over it is :class:`ProviderUnavailable`.
        :param tls: ``True`` or an ``ssl.SSLContext`` wraps the stream in TLS.
        :raises ProviderUnavailable: refused by the egress guard, or the connect failed.
        :raises BadInput: the URL has no scheme, host or port.
        """
        import anyio

        _, host, port = split_endpoint(url)
        self._check(url)
        announce_allowed(url)
        try:
            with anyio.fail_after(timeout):
                if tls:
                    ctx = tls if not isinstance(tls, bool) else None
                    return await anyio.connect_tcp(host, port, tls=True, ssl_context=ctx, **options)
                return await anyio.connect_tcp(host, port, **options)
        except TimeoutError:
            raise ProviderUnavailable(
                f"cannot connect to {host}:{port}: no answer within {timeout:g} s"
            ) from None
        except OSError as exc:
            raise ProviderUnavailable(f"cannot connect to {host}:{port}: {_why(exc)}") from None


def _why(exc: OSError) -> str:
    """What went wrong, in the system's words (``Connection refused``): anyio reports every
    failed attempt as one ``OSError`` whose cause is the first attempt's error."""
    for error in (exc, exc.__cause__):
        if isinstance(error, OSError) and error.errno:
            return os.strerror(error.errno)
    return str(exc) or type(exc).__name__
