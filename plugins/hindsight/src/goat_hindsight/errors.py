"""Typed errors of the Hindsight client, each a :mod:`goat_core.errors` class (exit codes).

Messages are one line, name the rule or the server answer, and never contain the API key
(the client never puts it anywhere but the ``Authorization`` header).
"""

from __future__ import annotations

from typing import Any

from goat_core.errors import (
    AuthError,
    NotFound,
    NotSupported,
    ProviderUnavailable,
    Rejected,
    TooLarge,
)

__all__ = [
    "BankNotFound",
    "ForbiddenTool",
    "HindsightAuthError",
    "IncompatibleServer",
    "MemoryNotFound",
    "ProtocolViolation",
    "RequestTooLarge",
    "ServerUnavailable",
    "ToolRejected",
    "WriteOutcomeUnknown",
]


class BankNotFound(NotFound):
    """``get_bank`` says the bank does not exist. GOAT never creates it (exit 3)."""


class MemoryNotFound(NotFound):
    """``get_memory`` knows no memory with that id in this bank (exit 3)."""


class ToolRejected(Rejected):
    """A well-formed rejection by the tool: an ``isError`` result or an error payload
    (``{"error": ...}``, ``{"status": "error", ...}``). A request error: the session stays
    up and health is unchanged (exit 5)."""


class ProtocolViolation(ProviderUnavailable):
    """The server answered something that is not a valid result: malformed or truncated
    JSON, structured content that is not an object or disagrees with its text block, a
    wrong shape, or a body over the size cap. The transport is closed (exit 6)."""


class ServerUnavailable(ProviderUnavailable):
    """The server could not be reached, the connection broke, or a deadline passed (exit 6)."""


class IncompatibleServer(ProviderUnavailable):
    """The server lacks one of the six tools GOAT needs; ``missing`` names them (exit 6)."""

    def __init__(self, message: str, *, missing: list[str], **details: Any) -> None:
        super().__init__(message, missing=missing, **details)
        self.missing = missing


class HindsightAuthError(AuthError):
    """HTTP 401/403: the key was refused (or is needed). No retry until the configuration
    changes or the user checks again (exit 6)."""


class RequestTooLarge(TooLarge):
    """The serialised tool arguments exceed the request limit; nothing was sent (exit 2)."""


class ForbiddenTool(NotSupported):
    """A tool outside GOAT's allow-list was asked for; nothing was sent (exit 4)."""


class WriteOutcomeUnknown(ProviderUnavailable):
    """A write failed after it may have reached the tool. It is never replayed; the
    provider turns it into an ``unknown`` receipt (exit 6)."""
