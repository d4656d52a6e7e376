"""The egress rule at run time: a network provider's Python sockets go only where the guard
allowed (docs/design.md, Credentials and egress).

A host that builds a provider with ``network=True`` calls :func:`watch` with the provider's
top-level package. From then on an audit hook sees every ``socket.connect`` of the process
(``sys.addaudithook``; Python has no way to remove one). A connect made while a frame of a
watched package is on the stack must lead to an address allowed before: a URL the guard
allowed (``goat.egress.allowed``, raised by ``context.connect``, ``context.authorize`` and
the guarded HTTP client) names its host and port. Anything else raises
:class:`~goat_core.errors.ProviderUnavailable` from the connect, before any byte is sent.
Connects of the host application itself (no provider frame on the stack) pass untouched.
Unix sockets pass; only TCP/IP addresses are judged.

What the guard allowed is kept per package: an allowance counts for the package whose frame
was on the stack when the guard allowed it (the host's own allowances for no package). Host
names admit any address on their port: the guard saw the name, the connect sees the address
it resolved to. Addresses are compared in one form (IPv4-mapped IPv6 as IPv4, IPv6
compressed).

Limits: the hook sees Python sockets only, and only with a provider frame on the stack. A
connect in C, in a subprocess, or in a worker thread started with a library function (not
the provider's own) passes unseen; the suite's socket-table check catches those in tests
(docs/authors.md, Runtime guards). A connect made inside ``logging`` (a host's log handler)
is the host's. ``__main__`` is never watched: a provider defined in the application itself
cannot be told from it.
"""

from __future__ import annotations

import ipaddress
import sys
import threading
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

from goat_core.errors import ProviderUnavailable

_lock = threading.Lock()
_packages: set[str] = set()
#: package (``None``: the host's own) -> the ``(host, port)`` pairs the guard allowed for it
_allowed: dict[str | None, set[tuple[str, int | None]]] = {}
_installed = False
#: set while the conformance suite's runtime guards watch a test: they judge every socket
#: (goat_core/testing/conformance/guards.py), so this hook stands aside
_deferred = False
#: never watched: the application itself, and core, which connects only through the guard
_NEVER = frozenset({"__main__", "goat_core"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def watch(package: str) -> None:
    """Judge the connects made under ``package`` (a top-level module name) from now on."""
    global _installed
    if package in _NEVER or package in sys.stdlib_module_names:
        return
    with _lock:
        _packages.add(package)
        if not _installed:
            sys.addaudithook(_audit)
            _installed = True


def allowed(package: str | None = None) -> frozenset[tuple[str, int | None]]:
    """The ``(host, port)`` pairs the guard allowed for ``package`` so far."""
    with _lock:
        return frozenset(_allowed.get(package, ()))


def canonical_host(host: str) -> str:
    """``host`` lowercased; an IP address in one form (IPv4-mapped IPv6 as IPv4)."""
    host = host.lower().strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _allow(url: str) -> None:
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return
    if parts.hostname:
        package = _watched_caller(sys._getframe(2))
        with _lock:
            _allowed.setdefault(package, set()).add((canonical_host(parts.hostname), port))


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "goat.egress.allowed":
        _allow(str(args[0]))
    elif event == "socket.connect" and _packages and not _deferred:
        _judge(args)


def defer_to_suite(on: bool) -> None:
    """Stand aside (``True``) while the conformance suite's guards judge sockets, or judge
    again (``False``)."""
    global _deferred
    _deferred = on


def _judge(args: tuple[Any, ...]) -> None:
    address = args[1] if len(args) > 1 else None
    if not (isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], str)):
        return  # a Unix socket or an address family the rule does not cover
    host, port = canonical_host(address[0]), address[1]
    package = _watched_caller(sys._getframe(2))
    if package is None or _passes(package, host, port):
        return
    raise ProviderUnavailable(
        f"egress refused by GOAT: {package} connected to {host}:{port}, which the egress guard "
        "never allowed; call `await context.authorize(url)` before the driver connects "
        "(docs/authors.md, Network providers)"
    )


def _watched_caller(frame: FrameType | None) -> str | None:
    """The watched package whose frame is nearest the connect, or ``None`` (the host's:
    no provider frame, or ``logging`` nearer than any)."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        top = module.partition(".")[0]
        if top == "logging":
            return None  # a log handler of the host's, called from a provider's log line
        if top in _packages:
            return top
        frame = frame.f_back
    return None


def _passes(package: str, host: str, port: Any) -> bool:
    with _lock:
        pairs = list(_allowed.get(package, ()))
    for allowed_host, allowed_port in pairs:
        if allowed_port != port:
            continue
        if allowed_host == host or not _is_ip(allowed_host):
            return True
    return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
