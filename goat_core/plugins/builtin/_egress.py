"""Built-in egress rule: allow only URLs a binding was explicitly bound to (``docs/design.md``).

``goat bind`` of a remote provider records the provider's ``egress_urls(settings)`` in the
binding's ``egress``; a request is allowed when its URL has the same scheme, host and port
as one of them and its path lies under that URL's path. Nothing else leaves the machine.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from goat_core.contract import Binding
from goat_core.hookspecs import hookimpl


def _under(url: str, prefix: str) -> bool:
    u, p = urlsplit(url), urlsplit(prefix)
    if (u.scheme.lower(), u.hostname, u.port) != (p.scheme.lower(), p.hostname, p.port):
        return False
    if u.username or u.password:
        return False
    base = p.path.rstrip("/")
    return u.path == base or u.path.startswith(base + "/")


@hookimpl(trylast=True)
def goat_authorize_egress(binding: Binding, url: str) -> bool | None:
    if binding.enabled and any(_under(url, prefix) for prefix in binding.egress):
        return True
    return None
