"""Scopes: Global or one Pen, the Pen id rules, and what a host asks to resolve a scope.

The rules are those of docs/design.md, Scopes. How a working directory becomes a Pen
(git remotes, worktrees) is not part of the contract: it is the built-in scope hook's job
(:mod:`goat_core.scope`); the contract only holds the request and the answer.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

from goat_core.contract._penid import normalize_pen_id
from goat_core.errors import ScopeError

_FROZEN = ConfigDict(frozen=True)
_STRICT = ConfigDict(frozen=True, extra="forbid")


class ScopeKind(StrEnum):
    GLOBAL = "global"
    PEN = "pen"


class Scope(BaseModel):
    """Exactly one of Global or ``Pen(pen_id)``. Build with :meth:`global_` or :meth:`pen`."""

    model_config = _STRICT

    kind: ScopeKind
    pen_id: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Scope:
        if self.kind is ScopeKind.GLOBAL and self.pen_id is not None:
            raise ScopeError("the Global scope has no Pen id")
        if self.kind is ScopeKind.PEN:
            if self.pen_id is None:
                raise ScopeError("a Pen scope needs a Pen id")
            if normalize_pen_id(self.pen_id) != self.pen_id:
                raise ScopeError(f"Pen id {self.pen_id!r} is not canonical; use Scope.pen()")
        return self

    @classmethod
    def global_(cls) -> Scope:
        return cls(kind=ScopeKind.GLOBAL)

    @classmethod
    def pen(cls, pen_id: str) -> Scope:
        """The Pen scope for ``pen_id``; raises :class:`ScopeError` for an invalid id."""
        return cls(kind=ScopeKind.PEN, pen_id=normalize_pen_id(pen_id))

    @classmethod
    def parse(cls, key: str) -> Scope:
        """Parse ``"global"`` or ``"pen:<id>"`` (the form :attr:`key` prints)."""
        if key == "global":
            return cls.global_()
        if key.startswith("pen:"):
            return cls.pen(key[4:])
        raise ScopeError(f"invalid scope {key!r}: expected 'global' or 'pen:<id>'")

    @property
    def is_global(self) -> bool:
        return self.kind is ScopeKind.GLOBAL

    @property
    def key(self) -> str:
        """``"global"`` or ``"pen:<id>"``; the ``scope`` value of every JSON output."""
        return "global" if self.pen_id is None else f"pen:{self.pen_id}"

    def __str__(self) -> str:
        return self.key


class Derivation(StrEnum):
    """How a :class:`ScopeResolution` was reached (docs/design.md, Scopes)."""

    PINNED = "pinned"
    PROJECT = "project"
    GIT_REMOTE = "git-remote"
    GIT_ROOT = "git-root"
    CWD = "cwd"
    GLOBAL = "global"


class ScopeRequest(BaseModel):
    """What a host knows about a chat.

    :param project_id: the chat's Pen id, or ``None`` for a loose chat. When set it always
        decides the scope.
    :param cwd: a working directory, used only without a project id.
    :param pin: an explicit Pen id pinned for the directory, used only without a project id.
    :param derive_from_cwd: resolve a Pen from ``cwd`` (CLI ``goat scope``); hosts of loose
        chats leave it off so a loose chat stays Global.
    """

    model_config = _STRICT

    project_id: str | None = None
    cwd: Path | None = None
    pin: str | None = None
    derive_from_cwd: bool = False


class ScopeResolution(BaseModel):
    """One scope plus how it was derived; ``identity`` is the project identity hashed into a
    derived Pen id (a normalised remote URL, a git common dir, or a folder)."""

    model_config = _FROZEN

    scope: Scope
    derivation: Derivation
    identity: str | None = None
    detail: str | None = None
