"""A remote context's lease on its supervisor slot, and the server rules a stored key
follows (which servers a binding names; when a key may go to a changed binding)."""

from __future__ import annotations

from goat_core.contract import Binding, Health, Provider
from goat_core.errors import GoatError
from goat_core.host._supervisor import SessionState, Supervisor


class RemoteLease:
    """A remote context's view of its slot: the supervisor's current session, looked up on
    every use (so a replaced transport is picked up and an outdated one never used)."""

    def __init__(self, supervisor: Supervisor, key: str, identity: str) -> None:
        self._supervisor = supervisor
        self._key = key
        self._identity = identity

    def provider(self) -> Provider | None:
        supervisor = self._supervisor
        status = supervisor.status(self._key)
        if status is None or supervisor.identity(self._key) != self._identity:
            return None
        try:
            return supervisor.session(self._key)
        except GoatError:
            return None

    def label(self) -> str | None:
        """The slot's provider label (``None``: the slot serves another configuration)."""
        supervisor = self._supervisor
        if supervisor.identity(self._key) != self._identity:
            return None
        return supervisor.label(self._key)

    def reason(self) -> str:
        supervisor = self._supervisor
        status = supervisor.status(self._key)
        if status is None or supervisor.identity(self._key) != self._identity:
            return f"the binding of {self._key} changed or was removed; get a new context"
        if status.health is not None and not status.health.ok:
            return unavailable_reason(status.state, status.health)
        try:
            supervisor.session(self._key)
        except GoatError as exc:
            return str(exc)
        return f"{self._key} is not available"


def unavailable_reason(state: SessionState, health: Health) -> str:
    if state is SessionState.AUTH_FAILED:
        return (
            f"{health.reason} (auth: not retried until the binding changes or you check "
            "again with `goat check`)"
        )
    return f"{health.reason} ({health.cause or 'unreachable'}; retried on next use)"


_DEFAULT_PORTS = {"https": 443, "http": 80}


def _servers(binding: Binding) -> frozenset[tuple[str, str, int | None]]:
    """The servers a binding's egress prefixes name: ``(scheme, host, port)``, lowercased,
    the scheme's default port filled in (``https://h`` and ``https://h:443`` are one)."""
    from urllib.parse import urlsplit

    out = set()
    for url in binding.egress:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        try:
            port = parts.port
        except ValueError:
            port = None
        out.add((scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)))
    return frozenset(out)


def same_servers(old: Binding, new: Binding) -> bool:
    """Whether a key stored for ``old`` may go to ``new``: same provider and the same
    servers (a bank or path change on one server is the same server; another host, port or
    scheme is not). A provider that names no egress URLs proves nothing about its server,
    so there only identical settings count. The rule of :meth:`MemoryHost.bind` and of
    draft checks."""
    if old.provider != new.provider:
        return False
    servers = _servers(old)
    if not servers or not _servers(new):
        return old.settings == new.settings
    return servers == _servers(new)
