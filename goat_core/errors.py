"""The one error tree of GOAT Memory.

Every error a provider, the host API or the CLI raises on purpose is a :class:`GoatError`.
Each class carries the CLI exit code it maps to (``exit_code``), so the CLI never guesses::

    GoatError                base; exit 1 (an internal error)
    ├── BadInput             exit 2  input that can never succeed as given
    │   ├── ScopeError       exit 2  invalid Pen id, conflicting scope answers, two scopes asked for
    │   ├── ConfigError      exit 2  memory.json or provider settings invalid, newer schema version
    │   ├── PathError        exit 2  a path escapes the store root, or names a forbidden file
    │   └── TooLarge         exit 2  an input over a provider's declared size limit
    ├── NotFound             exit 3  no such page, binding or provider
    │   └── Ambiguous        exit 3  several pages match; ``candidates`` lists them
    ├── NotSupported         exit 4  the provider does not declare the capability asked for
    ├── Conflict             exit 5  a concurrent edit, or a case-only twin of an existing note
    ├── Rejected             exit 5  a policy hook or the provider refused a write or read
    ├── ProviderUnavailable  exit 6  a provider could not be loaded, reached or used now
    │   ├── AuthError        exit 6  the server refused the credentials (401/403)
    │   ├── CredentialError  exit 6  a declared credential is missing or its store unusable
    │   ├── IndexDamaged     exit 6  an index under the GOAT home was found damaged (dropped)
    │   └── StoreUnwritable  exit 6  the store (or the GOAT home) is read-only or full
    └── PluginLoadError      exit 6  strict plugin loading found failures (``failures``)

Rules every raiser follows:

- Messages are one line, name the rule that was broken and never contain a secret.
- Nothing partial is left behind when one of these is raised by a write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = [
    "Ambiguous",
    "AuthError",
    "BadInput",
    "ConfigError",
    "Conflict",
    "CredentialError",
    "GoatError",
    "IndexDamaged",
    "NotFound",
    "NotSupported",
    "PathError",
    "PluginLoadError",
    "ProviderUnavailable",
    "Rejected",
    "ScopeError",
    "StoreUnwritable",
    "TooLarge",
]


class GoatError(Exception):
    """Base of every deliberate GOAT Memory error. ``exit_code`` is the CLI exit status."""

    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message


class BadInput(GoatError):
    """Input that can never succeed as given (exit 2)."""

    exit_code = 2


class ScopeError(BadInput):
    """An invalid Pen id, a plugin contradicting a chat's project id, or two scopes asked for."""


class ConfigError(BadInput):
    """Invalid ``memory.json`` or provider settings, or a schema version newer than this GOAT."""


class PathError(BadInput):
    """A path that escapes its store root or names something a store may not hold.

    ``rule`` names the containment rule that was broken (e.g. ``"parent-traversal"``).
    """

    def __init__(self, message: str, *, rule: str, **details: Any) -> None:
        super().__init__(message, rule=rule, **details)
        self.rule = rule


class TooLarge(BadInput):
    """An input over the provider's declared limit; nothing of it was stored."""


class NotFound(GoatError):
    """No page, binding, provider or operation with that name (exit 3)."""

    exit_code = 3


class Ambiguous(NotFound):
    """Several pages match one reference; ``candidates`` holds their ids (exit 3)."""

    def __init__(self, message: str, *, candidates: Sequence[str], **details: Any) -> None:
        super().__init__(message, candidates=list(candidates), **details)
        self.candidates = list(candidates)


class NotSupported(GoatError):
    """The provider does not declare the capability the operation needs (exit 4)."""

    exit_code = 4


class Conflict(GoatError):
    """A concurrent change won, or the write would create a case-only twin (exit 5)."""

    exit_code = 5


class Rejected(GoatError):
    """A policy hook or the provider refused the operation; ``reason`` says why (exit 5)."""

    exit_code = 5

    def __init__(self, message: str, *, reason: str | None = None, **details: Any) -> None:
        super().__init__(message, **details)
        self.reason = reason or message


class ProviderUnavailable(GoatError):
    """A provider could not be loaded, reached or used right now (exit 6)."""

    exit_code = 6


class AuthError(ProviderUnavailable):
    """The server refused the credentials; no retry until configuration changes (exit 6)."""


class CredentialError(ProviderUnavailable):
    """A declared credential is missing or the credential store cannot be used (exit 6)."""


class IndexDamaged(ProviderUnavailable):
    """A local index under the GOAT home was found damaged while it was read (exit 6).

    The damaged part was dropped from the index, so the next sync rebuilds it; the message
    says what was found. Nothing of the store itself is touched.
    """


class StoreUnwritable(ProviderUnavailable):
    """The store cannot be written now: its disk is full or it is read-only (exit 6).

    The message says which (``reason``: ``"full"`` or ``"read-only"``) and names ``path``.
    Nothing of the write landed; reads keep working from what is already stored wherever
    possible. :meth:`from_os_error` builds one from the ``OSError`` a write raised.
    """

    #: ``errno`` values that mean "cannot write here now".
    FULL_ERRNOS: ClassVar[frozenset[int]] = frozenset({28, 122})  # ENOSPC, EDQUOT
    READ_ONLY_ERRNOS: ClassVar[frozenset[int]] = frozenset({1, 13, 30})  # EPERM, EACCES, EROFS

    def __init__(self, message: str, *, path: str, reason: str, **details: Any) -> None:
        super().__init__(message, path=path, reason=reason, **details)
        self.path = path
        self.reason = reason

    @classmethod
    def from_os_error(
        cls,
        exc: OSError,
        path: object,
        *,
        target: str = "the store",
        outcome: str = "nothing was stored",
    ) -> StoreUnwritable | None:
        """The typed error for ``exc`` raised while writing ``path``, or ``None`` when
        ``exc`` is not a full or read-only store (re-raise it then). The message reads
        ``cannot write {target} at {path}: the disk is full|it is read-only (...); {outcome}``.
        """
        if exc.errno in cls.FULL_ERRNOS:
            reason = "full"
        elif exc.errno in cls.READ_ONLY_ERRNOS or isinstance(exc, PermissionError):
            reason = "read-only"
        else:
            return None
        what = "the disk is full" if reason == "full" else "it is read-only"
        return cls(
            f"cannot write {target} at {path}: {what} ({exc.strerror or type(exc).__name__}); "
            f"{outcome}",
            path=str(path),
            reason=reason,
        )


class PluginLoadError(GoatError):
    """Strict loading (``GOAT_STRICT_PLUGINS=1``) found plugin failures; see ``failures``."""

    exit_code = 6

    def __init__(self, failures: Sequence[Any]) -> None:
        names = ", ".join(f"{f.plugin}: {f.error}" for f in failures)
        hooks = all(getattr(f, "kind", None) == "hook" for f in failures) and failures
        what = "had a failing hook" if hooks else "failed to load"
        super().__init__(f"{len(failures)} plugin(s) {what} (strict plugins): {names}")
        self.failures = list(failures)
