"""Built-in scope resolution (``docs/design.md``), registered ``trylast`` so a third-party
plugin's answer comes first. The rules live in :mod:`goat_core.scope`."""

from __future__ import annotations

from goat_core.contract import ScopeRequest, ScopeResolution
from goat_core.hookspecs import hookimpl


@hookimpl(trylast=True)
def goat_resolve_scope(request: ScopeRequest) -> ScopeResolution | None:
    """Project id, then pin, then (if asked) the working directory's identity, else Global."""
    from goat_core.scope import resolve_request

    return resolve_request(request)
