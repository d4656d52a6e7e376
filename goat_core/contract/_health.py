"""A provider's health: status tones, why a check failed, and how an error becomes a Health
(docs/design.md, Remote providers and the supervisor)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from goat_core.errors import AuthError, CredentialError, GoatError, NotFound, ProviderUnavailable
from goat_core.logs import redact

#: A one-line reason that may quote a server: every secret handed out in this process (stored
#: and draft keys, in every form) is redacted when the model is built, so no status, health,
#: receipt or turn shows it (docs/design.md, Credentials and egress).
RedactedText = Annotated[str, AfterValidator(redact)]


class Tone(StrEnum):
    """Status tones: ``quiet`` healthy default, ``accent`` valid but non-default, ``warn``
    broken (with a reason), ``dim`` intentionally off."""

    QUIET = "quiet"
    ACCENT = "accent"
    WARN = "warn"
    DIM = "dim"


#: Why a check failed, in words that hold for any provider; the provider's own detail (which
#: bank, which tool, which HTTP status) goes in :attr:`Health.reason`.
#:
#: - ``auth``: the credential was refused or cannot be used; no automatic retry until the
#:   configuration changes or the user checks again.
#: - ``unreachable``: no connection, a broken transport, a deadline, or a cause the provider
#:   cannot tell; retried with backoff.
#: - ``not_found``: the server does not know the store the binding names (a bank, a
#:   collection, an index, a database).
#: - ``incompatible``: the server lacks an operation the provider needs, speaks a version
#:   the provider cannot use, or is set up so that no write could honestly be ``stored`` (it
#:   does not make writes durable).
#:
#: :meth:`Health.from_error` picks the cause from the error class, so a provider need not
#: spell it. The names of the first release, ``bank_not_found`` and ``missing_tools``, are
#: still accepted and read as ``not_found`` and ``incompatible``
#: (:data:`LEGACY_CAUSES`), so a provider written against them keeps working.
HealthCause = Literal["auth", "not_found", "unreachable", "incompatible"]

#: Cause names of the first release, and what they mean now.
LEGACY_CAUSES: dict[str, HealthCause] = {
    "bank_not_found": "not_found",
    "missing_tools": "incompatible",
}


class Health(BaseModel):
    """A provider's health: ``ok`` plus a tone and a one-line reason.

    :param cause: for a failed check, why (:data:`HealthCause`); ``None`` when healthy or
        when the provider cannot tell (the connection supervisor then treats it as
        ``unreachable``).
    """

    model_config = ConfigDict(frozen=True)

    ok: bool
    tone: Tone
    reason: RedactedText = ""
    checked_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    cause: HealthCause | None = None

    @field_validator("cause", mode="before")
    @classmethod
    def _generic_cause(cls, value: object) -> object:
        """A first-release cause name (``bank_not_found``...) reads as its generic one."""
        if isinstance(value, str):
            return LEGACY_CAUSES.get(value, value)
        return value

    @classmethod
    def healthy(cls, reason: str = "ok") -> Health:
        return cls(ok=True, tone=Tone.QUIET, reason=reason)

    @classmethod
    def broken(cls, reason: str, cause: HealthCause | str | None = None) -> Health:
        return cls.model_validate(
            {"ok": False, "tone": Tone.WARN, "reason": reason, "cause": cause}
        )

    @classmethod
    def from_error(cls, exc: BaseException, *, label: str | None = None) -> Health:
        """The broken health a check reports for ``exc`` (what ``check`` returns instead of
        raising).

        The reason is the error's message (``"<label>: <message>"`` with ``label``, e.g.
        ``self.label()``); an error that is not a :class:`~goat_core.errors.GoatError` says
        only its type (``"RuntimeError during check"``), since its text may hold anything.
        The cause is :meth:`cause_of` the error.
        """
        if isinstance(exc, GoatError):
            reason = str(exc)
        else:
            reason = f"{type(exc).__name__} during check"
        if label:
            reason = f"{label}: {reason}"
        return cls.broken(reason, cause=cls.cause_of(exc))

    @staticmethod
    def cause_of(exc: BaseException) -> HealthCause:
        """The :data:`HealthCause` of an error raised by a check.

        :class:`~goat_core.errors.AuthError` and
        :class:`~goat_core.errors.CredentialError` are ``auth``;
        :class:`~goat_core.errors.NotFound` is ``not_found``; a
        :class:`~goat_core.errors.ProviderUnavailable` naming ``missing`` operations (an
        attribute or a detail) is ``incompatible``; anything else is ``unreachable``.
        """
        if isinstance(exc, AuthError | CredentialError):
            return "auth"
        if isinstance(exc, NotFound):
            return "not_found"
        if isinstance(exc, ProviderUnavailable) and (
            getattr(exc, "missing", None) or exc.details.get("missing")
        ):
            return "incompatible"
        return "unreachable"
