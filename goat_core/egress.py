"""Former home of the egress guard of remote providers, now in :mod:`goat_core.host`:
re-exports the names this module had (import them from :mod:`goat_core.host`)."""

from goat_core.host._egress import (
    EGRESS_HEADER,
    TRANSPORT_OPTIONS,
    check_egress,
    guarded_http_client,
    guarded_transport,
)

__all__ = [
    "EGRESS_HEADER",
    "TRANSPORT_OPTIONS",
    "check_egress",
    "guarded_http_client",
    "guarded_transport",
]
