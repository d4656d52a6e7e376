"""Deprecated: ``goat_core.supervisor`` is an old path; import from
:mod:`goat_core.host._supervisor` instead.

This module was part of the host before goat_core was laid out in packages (see
docs/architecture.md). It re-exports its old names unchanged and warns
(``DeprecationWarning``) when imported.
"""

import warnings

from goat_core.host._supervisor import (
    Clock,
    MonotonicClock,
    Reconciled,
    RetryPolicy,
    SessionState,
    SlotStatus,
    Supervisor,
    Target,
    cause_of_error,
    digest,
    transport_fingerprint,
)

__all__ = [
    "Clock",
    "MonotonicClock",
    "Reconciled",
    "RetryPolicy",
    "SessionState",
    "SlotStatus",
    "Supervisor",
    "Target",
    "cause_of_error",
    "digest",
    "transport_fingerprint",
]

__deprecated__ = "goat_core.host._supervisor"

warnings.warn(
    "goat_core.supervisor is deprecated; import from goat_core.host._supervisor instead",
    DeprecationWarning,
    stacklevel=2,
)
