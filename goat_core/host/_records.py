"""What the host API takes and returns: a :class:`Chat`, the outcome of a bind and the
rows of ``goat status``, and how a scope's store is named."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from goat_core.contract import Binding, Health, HealthCause, Scope, Tone, normalize_pen_id
from goat_core.logs import redact

#: The provider of the embedded default Global store (docs/design.md, Bindings and providers).
EMBEDDED_DEFAULT_PROVIDER = "markdown"
#: The id of the synthetic binding an unbound Global scope uses.
DEFAULT_BINDING_ID = "default"


@dataclass(frozen=True)
class Chat:
    """What the host knows about one chat: its project id (a Pen id) or ``None`` (loose).

    The id is normalised like every Pen id (NFC, lowercase) and validated here.

    :raises ScopeError: an invalid Pen id (the rule is named).
    """

    project_id: str | None = None

    def __post_init__(self) -> None:
        if self.project_id is not None:
            object.__setattr__(self, "project_id", normalize_pen_id(self.project_id))

    def moved_to(self, project_id: str | None) -> Chat:
        """The same chat in another project (or loose with ``None``)."""
        return Chat(project_id=project_id)


class BindOutcome(BaseModel):
    """What :meth:`MemoryHost.bind` did: the saved binding and, for a network provider
    bound with ``connect=True``, the explicit connect's health (saving succeeds anyway)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    scope: Scope
    binding: Binding
    config_path: Path
    health: Health | None = None
    credential_backend: Literal["keyring", "file"] | None = None
    #: Settings the replaced binding of the same provider had and this one does not give
    #: again (they are back at their defaults; ``bind`` replaces, it never merges).
    dropped: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope.key,
            "binding": self.binding.id,
            "provider": self.binding.provider,
            "saved": str(self.config_path),
            "dropped_settings": list(self.dropped),
            "health": None
            if self.health is None
            else {
                "ok": self.health.ok,
                "tone": self.health.tone.value,
                "reason": self.health.reason,
            },
        }


class BindingStatus(BaseModel):
    """One row of ``goat status``.

    :param tone: ``quiet`` (the healthy embedded default), ``accent`` (a valid non-default
        binding), ``warn`` (broken; ``reason`` says why), ``dim`` (intentionally off).
    :param identity: for a Pen derived from a directory, the project identity.
    :param derivation: how that Pen was derived (``git-remote``, ``git-root``, ...).
    :param cause: for ``warn``: ``auth``, ``not_found``, ``unreachable`` or
        ``incompatible`` (:data:`~goat_core.contract.HealthCause`).
    """

    model_config = ConfigDict(frozen=True)

    scope: str
    label: str
    provider: str | None
    tone: Tone
    reason: Annotated[str, AfterValidator(redact)]  # may quote a server: never a secret
    last_checked: datetime | None = None
    binding_id: str | None = None
    enabled: bool = True
    identity: str | None = None
    derivation: str | None = None
    cause: HealthCause | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``goat status --json`` row; ``cause`` appears on ``warn`` rows that have one,
        ``identity`` and ``derivation`` on a Pen derived from a directory."""
        out: dict[str, Any] = {
            "scope": self.scope,
            "label": self.label,
            "provider": self.provider,
            "tone": self.tone.value,
            "reason": self.reason,
            "last_checked": self.last_checked.isoformat() if self.last_checked else None,
        }
        if self.cause is not None:
            out["cause"] = self.cause
        if self.identity is not None or self.derivation is not None:
            out["identity"] = self.identity
            out["derivation"] = self.derivation
        return out


def scope_label(scope: Scope) -> str:
    """``"Global memory"`` or ``"Pen `<id>` memory"``."""
    return "Global memory" if scope.is_global else f"Pen `{scope.pen_id}` memory"
