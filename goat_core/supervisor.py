"""Former home of the connection supervisor of remote bindings, now in :mod:`goat_core.host`:
re-exports the names this module had (import them from :mod:`goat_core.host`)."""

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
