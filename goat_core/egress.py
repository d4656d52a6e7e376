"""Deprecated: ``goat_core.egress`` is an old path; import from
:mod:`goat_core.host._egress` instead.

This module was part of the host before goat_core was laid out in packages (see
docs/architecture.md). It re-exports its old names unchanged and warns
(``DeprecationWarning``) when imported.
"""

import warnings

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

__deprecated__ = "goat_core.host._egress"

warnings.warn(
    "goat_core.egress is deprecated; import from goat_core.host._egress instead",
    DeprecationWarning,
    stacklevel=2,
)
