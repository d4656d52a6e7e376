"""What a provider declares and what a user binds: capabilities, consistency, credentials,
bindings (docs/design.md, Bindings and providers).

:class:`~goat_core.contract.ProviderSpec` itself lives with the :class:`Provider` class it
builds (``_provider.py``): the two refer to each other, so they share a module.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from goat_core.contract._penid import PEN_ID_PATTERN

_STRICT = ConfigDict(frozen=True, extra="forbid")


def credential_env_var(binding_id: str, name: str = "api_key") -> str:
    """The environment variable overriding credential ``name`` of binding ``binding_id``.

    ``GOAT_<NAME>_<BINDING_ID>``, both uppercased with every non-alphanumeric as ``_``:
    ``credential_env_var("pen-my.app")`` is ``GOAT_API_KEY_PEN_MY_APP``.
    """

    def part(value: str) -> str:
        return re.sub(r"[^A-Z0-9]", "_", value.upper())

    return f"GOAT_{part(name)}_{part(binding_id)}"


class Capability(StrEnum):
    """What a provider declares it does; declared, never guessed (docs/design.md, Bindings
    and providers).

    The contract's capabilities are the ones core backs with an operation:

    - ``scoped_stores`` / ``shared_bank``: the store kind, exactly one per provider (isolated
      Global and Pen stores, or one bank whatever the scope).
    - ``pages``: :meth:`Provider.list_pages`, :meth:`Provider.get_page`.
    - ``map``: :meth:`Provider.link_map`, :meth:`Provider.connections`.
    - ``reflect``: :meth:`Provider.reflect`.
    - ``feedback``: :meth:`Provider.feedback`.

    A provider's own features (the wiki's lint and ingest) are not capabilities: they reach
    users through its extra tools and commands. The first release's ``lint``, ``ingest`` and
    ``export`` are not members; a spec that still declares them loads with a
    ``DeprecationWarning`` and without them (:data:`RETIRED_CAPABILITIES`).
    """

    PAGES = "pages"
    MAP = "map"
    REFLECT = "reflect"
    FEEDBACK = "feedback"
    SCOPED_STORES = "scoped_stores"
    SHARED_BANK = "shared_bank"


#: Capabilities of the first release that core never backed with an operation. A spec
#: declaring one still loads: :class:`~goat_core.contract.ProviderSpec` drops it with a
#: ``DeprecationWarning`` naming it.
RETIRED_CAPABILITIES = frozenset({"lint", "ingest", "export"})


class Consistency(StrEnum):
    """``immediate``: recall sees a stored write at once. ``eventual``: recall may lag
    remember."""

    IMMEDIATE = "immediate"
    EVENTUAL = "eventual"


class CredentialSpec(BaseModel):
    """A secret a provider needs. The value lives only in the credential store.

    :param name: short name, e.g. ``"api_key"``.
    :param description: one line for prompts and fix-it messages.
    :param required: whether the provider refuses to work without it.
    """

    model_config = _STRICT

    name: str = "api_key"
    description: str = "API key"
    required: bool = False


class ProjectRecord(BaseModel):
    """Where a bound Pen's project lives: ``location`` (the folder, or a repository's main
    worktree, as a real path) and ``root`` (the repository's first commit, ``None`` for a
    folder or a repository without commits). A repository cloned anew at the same path has
    another ``root``, so it never inherits the Pen."""

    model_config = _STRICT

    location: str
    root: str | None = None


class Binding(BaseModel):
    """A configured provider instance: one per scope is selected (docs/design.md, Bindings and
    providers).

    :param id: binding id, ``[a-z0-9][a-z0-9._-]{0,63}``; the credential env override is
        ``GOAT_API_KEY_<ID uppercased, non-alphanumerics as _>``.
    :param provider: provider name.
    :param settings: validated settings as plain JSON values (never a secret).
    :param enabled: ``False`` means intentionally off (tone ``dim``), never contacted.
    :param egress: URL prefixes the user authorised by binding explicitly (computed by
        ``goat bind`` from ``ProviderSpec.egress_urls``); the built-in egress rule allows
        only these.
    :param projects: the :class:`ProjectRecord` of each folder bound to this Pen.
    """

    model_config = _STRICT

    id: str
    provider: str
    settings: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True
    egress: tuple[str, ...] = ()
    #: the folders whose project this Pen is, recorded by ``goat bind`` in that folder
    #: (``goat_core.scope.project_record``); a folder whose identity changed keeps this Pen
    projects: tuple[ProjectRecord, ...] = ()

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not PEN_ID_PATTERN.fullmatch(v):
            raise ValueError(f"binding id {v!r} must match [a-z0-9][a-z0-9._-]{{0,63}}")
        return v

    @property
    def credential_env_var(self) -> str:
        return credential_env_var(self.id)
