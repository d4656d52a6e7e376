"""The egress guard: remote providers get their network clients only from here.

:func:`guarded_http_client` builds an ``httpx2.AsyncClient`` (what the mcp 2.x SDK needs)
whose transport asks ``goat_authorize_egress`` (through
:meth:`Registry.authorize_egress <goat_core.plugins.Registry.authorize_egress>`) before
*every* request, redirects included. A refused request never reaches the network: it is
answered with a ``403`` response whose JSON body is ``{"error": "egress refused by GOAT:
..."}`` and whose ``x-goat-egress`` header is ``refused``. It is answered rather than
raised because an exception inside an httpx2 transport tears down a whole MCP connection
(verified with mcp 2.3). A failing check also refuses (fail closed).

:func:`check_egress` asks the same question before connecting and raises
:class:`~goat_core.errors.ProviderUnavailable`.

The built-in rule (``goat_core.plugins.builtin``) allows only URLs under the
``egress`` prefixes of an enabled binding the user explicitly bound (docs/design.md,
Credentials and egress).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from goat_core.contract import Binding
from goat_core.errors import ProviderUnavailable
from goat_core.host._connect import announce_allowed
from goat_core.logs import get_logger
from goat_core.plugins import Registry

if TYPE_CHECKING:
    import httpx2


#: Response header set on a refusal (``x-goat-egress: refused``).
EGRESS_HEADER = "x-goat-egress"

#: ``guarded_http_client`` keyword arguments that configure the inner
#: ``httpx2.AsyncHTTPTransport`` (not allowed together with ``transport=``).
TRANSPORT_OPTIONS = frozenset({"verify", "cert", "http1", "http2", "limits", "proxy", "trust_env"})

log = get_logger("goat_core.egress")

_DOT_SEGMENT = re.compile(r"(?:^|/)(?:\.|%2e){1,2}(?:/|$)", re.IGNORECASE)


def _shown(url: str) -> str:
    """``url`` without userinfo, query or fragment (those may carry credentials)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _decide(registry: Registry, binding: Binding, url: str) -> str | None:
    """``None`` when allowed, else the reason it is refused.

    Core refuses a disabled binding and a path with a percent-encoded dot segment (which a
    server may resolve outside the authorised prefix) before any hook is asked.
    """
    if not binding.enabled:
        return f"binding {binding.id!r} is disabled"
    if _DOT_SEGMENT.search(urlsplit(url).path):
        return f"{_shown(url)} has a dot segment in its path"
    if registry.authorize_egress(binding, url):
        return None
    return f"{_shown(url)} is not authorised for binding {binding.id!r}"


def check_egress(registry: Registry, binding: Binding, url: str) -> None:
    """Ask the egress hooks before connecting to ``url`` for ``binding``.

    :raises ProviderUnavailable: the request would be refused (message names the URL
        without credentials or query, and the binding).
    :raises TypeError: a plugin returned an awaitable (hooks are synchronous).
    """
    import httpx2

    try:
        url = str(httpx2.URL(url))  # the form the client sends: dot segments resolved
    except (httpx2.InvalidURL, TypeError) as exc:
        raise ProviderUnavailable(
            f"egress refused by GOAT: the URL is invalid ({type(exc).__name__})"
        ) from None
    reason = _decide(registry, binding, url)
    if reason is not None:
        raise ProviderUnavailable(
            f"egress refused by GOAT: {reason}; bind it explicitly with `goat bind` to allow it",
            binding_id=binding.id,
        )


@functools.cache
def _transport_class() -> type[httpx2.AsyncBaseTransport]:
    import httpx2

    class GuardedTransport(httpx2.AsyncBaseTransport):
        """Asks the egress hooks on every request; answers a refusal with a 403."""

        def __init__(
            self, inner: httpx2.AsyncBaseTransport, registry: Registry, binding: Binding
        ) -> None:
            self.inner = inner
            self.registry = registry
            self.binding = binding

        def __repr__(self) -> str:
            return f"GuardedTransport(binding={self.binding.id!r}, inner={self.inner!r})"

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            url = str(request.url)
            try:
                reason = _decide(self.registry, self.binding, url)
            except Exception as exc:  # fail closed, never raise inside the transport
                reason = f"the egress check failed ({type(exc).__name__}: {exc})"
                log.error(
                    "egress.check_failed",
                    binding=self.binding.id,
                    url=_shown(url),
                    error=f"{type(exc).__name__}: {exc}",
                )
            if reason is None:
                announce_allowed(url)
                return await self.inner.handle_async_request(request)
            log.warning("egress.refused", binding=self.binding.id, url=_shown(url))
            return httpx2.Response(
                403,
                json={"error": f"egress refused by GOAT: {reason}"},
                headers={EGRESS_HEADER: "refused"},
                request=request,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return GuardedTransport


def guarded_transport(
    registry: Registry,
    binding: Binding,
    inner: httpx2.AsyncBaseTransport | None = None,
    **transport_options: Any,
) -> httpx2.AsyncBaseTransport:
    """An ``httpx2.AsyncBaseTransport`` guarding ``inner`` (default: a new
    ``httpx2.AsyncHTTPTransport(**transport_options)``) for ``binding``."""
    if inner is None:
        import httpx2

        inner = httpx2.AsyncHTTPTransport(**transport_options)
    elif transport_options:
        raise TypeError(
            f"{', '.join(sorted(transport_options))} configure the default transport; "
            "configure the injected transport instead"
        )
    guarded: Any = _transport_class()  # built lazily: httpx2 is imported on first use
    return guarded(inner, registry, binding)  # type: ignore[no-any-return]


def guarded_http_client(
    registry: Registry, binding: Binding, **client_kwargs: Any
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` whose every request passes the egress guard.

    :param registry: asked through ``goat_authorize_egress`` on every request.
    :param binding: the binding the provider serves (its ``egress`` prefixes and
        ``enabled`` flag decide with the built-in rule).
    :param client_kwargs: passed to ``httpx2.AsyncClient`` (headers, timeout, base_url,
        follow_redirects, ...). ``transport=`` injects the inner transport (tests:
        ``httpx2.MockTransport``); ``verify``, ``cert``, ``http1``, ``http2``, ``limits``,
        ``proxy`` and ``trust_env`` configure the default inner transport.
    :raises TypeError: ``mounts=`` (mounted transports would bypass the guard), or
        transport options together with ``transport=``.

    Creating the client opens no connection.
    """
    import httpx2

    if "mounts" in client_kwargs:
        raise TypeError("mounts= would bypass the GOAT egress guard; it is not accepted")
    inner = client_kwargs.pop("transport", None)
    options = {k: client_kwargs.pop(k) for k in list(client_kwargs) if k in TRANSPORT_OPTIONS}
    transport = guarded_transport(registry, binding, inner, **options)
    # A client given a transport ignores proxy environment variables, so nothing else is
    # mounted beside the guarded transport.
    return httpx2.AsyncClient(transport=transport, **client_kwargs)
