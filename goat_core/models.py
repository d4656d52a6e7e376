"""Typed value objects of the GOAT Memory contract (pydantic v2, frozen).

Shapes follow DESIGN section 2. Every model is frozen; config-facing models forbid extra keys.
JSON field names are the ones the CLI prints with ``--json``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from goat_core.errors import ScopeError

if TYPE_CHECKING:
    from goat_core.provider import Provider, ProviderContext

__all__ = [
    "PEN_ID_PATTERN",
    "Binding",
    "Capability",
    "Connections",
    "Consistency",
    "CredentialSpec",
    "Derivation",
    "Edge",
    "Health",
    "HealthCause",
    "Link",
    "LinkMap",
    "LinkResolution",
    "MemoryWrite",
    "Page",
    "PageList",
    "PageSummary",
    "PluginInfo",
    "PluginLoadFailure",
    "ProviderSpec",
    "RecallItem",
    "RecallResult",
    "Receipt",
    "ReceiptStatus",
    "Reflection",
    "Scope",
    "ScopeKind",
    "ScopeRequest",
    "ScopeResolution",
    "Tone",
    "credential_env_var",
    "derive_pen_id",
    "normalize_pen_id",
]

_FROZEN = ConfigDict(frozen=True)
_STRICT = ConfigDict(frozen=True, extra="forbid")

#: Pen ids after NFC normalisation and lowercasing (DESIGN section 2).
PEN_ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def normalize_pen_id(raw: str) -> str:
    """Return the canonical Pen id for ``raw`` or raise :class:`ScopeError` naming the rule.

    Rule (DESIGN section 2): NFC-normalise, lowercase, then the whole id must match
    ``[a-z0-9][a-z0-9._-]{0,63}`` (1 to 64 ASCII characters). Nothing is stripped or
    replaced, so an invalid id is rejected, never widened to another scope.

    :raises ScopeError: empty, whitespace, ``/``, ``:``, ``%``, non-ASCII, too long, or a
        first character that is not a letter or digit.
    """
    if not isinstance(raw, str):
        raise ScopeError(f"Pen id must be a string, got {type(raw).__name__}")
    value = unicodedata.normalize("NFC", raw).lower()
    if PEN_ID_PATTERN.fullmatch(value):
        return value
    if not value:
        rule = "it is empty"
    elif len(value) > 64:
        rule = f"it is {len(value)} characters long (at most 64)"
    elif not value.isascii():
        rule = "it contains non-ASCII characters"
    elif not value[0].isalnum():
        rule = "it must start with a letter or digit"
    else:
        bad = sorted({c for c in value if not (c.isalnum() or c in "._-")})
        rule = "it contains " + ", ".join(repr(c) for c in bad)
    raise ScopeError(
        f"invalid Pen id {raw!r}: {rule}; Pen ids match [a-z0-9][a-z0-9._-]{{0,63}} "
        "after NFC normalisation and lowercasing"
    )


def derive_pen_id(basename: str, identity: str) -> str:
    """Derive a Pen id from a project's folder name and its identity string.

    The result is ``<basename slug>-<first 8 hex of sha256(identity)>`` (DESIGN section 2),
    so two repos or folders with the same name but different identities never share a Pen.
    The slug keeps ``[a-z0-9._-]`` after NFKD folding and lowercasing, maps every other run
    to ``-``, and is cut to 55 characters so the whole id stays within 64.
    """
    folded = unicodedata.normalize("NFKD", basename).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9._-]+", "-", folded.lower()).strip("-._")[:55].strip("-._")
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:8]
    return normalize_pen_id(f"{slug or 'project'}-{digest}")


def credential_env_var(binding_id: str, name: str = "api_key") -> str:
    """The environment variable overriding credential ``name`` of binding ``binding_id``.

    ``GOAT_<NAME>_<BINDING_ID>``, both uppercased with every non-alphanumeric as ``_``:
    ``credential_env_var("pen-my.app")`` is ``GOAT_API_KEY_PEN_MY_APP``.
    """

    def part(value: str) -> str:
        return re.sub(r"[^A-Z0-9]", "_", value.upper())

    return f"GOAT_{part(name)}_{part(binding_id)}"


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
    """How a :class:`ScopeResolution` was reached (DESIGN section 3)."""

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


class Capability(StrEnum):
    """Declared, never guessed (DESIGN section 2)."""

    PAGES = "pages"
    MAP = "map"
    REFLECT = "reflect"
    FEEDBACK = "feedback"
    SCOPED_STORES = "scoped_stores"
    SHARED_BANK = "shared_bank"
    LINT = "lint"
    INGEST = "ingest"
    EXPORT = "export"


class Consistency(StrEnum):
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


class ProviderSpec(BaseModel):
    """What a plugin declares about one provider (returned by ``goat_register_providers``).

    :param name: the provider name users type (``goat bind --pen x markdown``).
    :param capabilities: declared capabilities; exactly one of ``scoped_stores`` and
        ``shared_bank``.
    :param consistency: ``immediate`` or ``eventual`` (recall may lag remember).
    :param settings_model: pydantic model (``extra="forbid"``) validated by ``goat bind``;
        its JSON schema renders host settings forms.
    :param credentials: declared secrets; values never enter settings.
    :param network: ``True`` when the provider opens network connections (egress guarded).
    :param factory: ``factory(context) -> Provider``; imports heavy modules lazily.
    :param egress_urls: ``egress_urls(settings) -> [url, ...]``, the URL prefixes an explicit
        bind authorises (remote providers only).
    :param legacy_decoder: ``legacy_decoder(raw_entry) -> reason | None``; a non-None reason
        marks a stored binding entry as legacy: kept byte-for-byte, failing closed.
    :param max_input_chars: largest text remember/feedback accepts; larger is ``TooLarge``.
    :param duplicate_policy: what remembering identical text N times yields: ``"keep"`` (N
        results) or ``"merge"`` (at least one); the conformance suite holds it to this.
    :param counts_tokens: the provider's ``recall`` takes ``max_tokens`` (the most tokens of
        recalled text the caller will use, e.g. Hindsight's ``max_tokens``); the host then
        passes a turn's budget in tokens (characters / 4) instead of trimming characters only.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    display_name: str
    version: str
    description: str = ""
    capabilities: frozenset[Capability]
    consistency: Consistency = Consistency.IMMEDIATE
    settings_model: type[BaseModel]
    credentials: tuple[CredentialSpec, ...] = ()
    network: bool = False
    factory: Callable[[ProviderContext], Provider]
    egress_urls: Callable[[Any], Sequence[str]] | None = None
    legacy_decoder: Callable[[Mapping[str, Any]], str | None] | None = None
    max_input_chars: int = 100_000
    duplicate_policy: Literal["keep", "merge"] = "keep"
    counts_tokens: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_-]{0,31}", v):
            raise ValueError(f"provider name {v!r} must match [a-z][a-z0-9_-]{{0,31}}")
        return v

    @model_validator(mode="after")
    def _kinds(self) -> ProviderSpec:
        kinds = {Capability.SCOPED_STORES, Capability.SHARED_BANK} & self.capabilities
        if len(kinds) != 1:
            raise ValueError(
                f"provider {self.name!r} must declare exactly one of scoped_stores, shared_bank"
            )
        return self

    def supports(self, capability: Capability | str) -> bool:
        return Capability(capability) in self.capabilities

    def settings_schema(self) -> dict[str, Any]:
        """The settings model's JSON schema, for host settings forms."""
        return self.settings_model.model_json_schema()


# ``Provider``/``ProviderContext`` are imported only for type checkers (goat_core.provider
# imports this module); at run time pydantic only needs to know ``factory`` is a callable.
ProviderSpec.model_rebuild(_types_namespace={"Provider": Any, "ProviderContext": Any})


class Binding(BaseModel):
    """A configured provider instance: one per scope is selected (DESIGN section 2).

    :param id: binding id, ``[a-z0-9][a-z0-9._-]{0,63}``; the credential env override is
        ``GOAT_API_KEY_<ID uppercased, non-alphanumerics as _>``.
    :param provider: provider name.
    :param settings: validated settings as plain JSON values (never a secret).
    :param enabled: ``False`` means intentionally off (tone ``dim``), never contacted.
    :param egress: URL prefixes the user authorised by binding explicitly (computed by
        ``goat bind`` from ``ProviderSpec.egress_urls``); the built-in egress rule allows
        only these.
    """

    model_config = _STRICT

    id: str
    provider: str
    settings: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True
    egress: tuple[str, ...] = ()

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not PEN_ID_PATTERN.fullmatch(v):
            raise ValueError(f"binding id {v!r} must match [a-z0-9][a-z0-9._-]{{0,63}}")
        return v

    @property
    def credential_env_var(self) -> str:
        return credential_env_var(self.id)


class MemoryWrite(BaseModel):
    """What is about to be remembered; policy hooks may return a changed copy.

    :param kind: ``remember`` or ``feedback``.
    :param text: the text, as given.
    :param title: optional title (file providers append to a note of that title).
    :param on: for feedback, the page it is about.
    :param source: who or what remembered it (``"cli"``, ``"model"``, a host name).
    :param tags: optional tags.
    """

    model_config = _FROZEN

    kind: Literal["remember", "feedback"] = "remember"
    text: str
    title: str | None = None
    on: str | None = None
    source: str = "api"
    tags: tuple[str, ...] = ()


class ReceiptStatus(StrEnum):
    STORED = "stored"
    QUEUED = "queued"
    REJECTED = "rejected"
    UNKNOWN = "unknown"
    FAILED = "failed"


class Receipt(BaseModel):
    """The truthful outcome of a write (DESIGN section 2).

    ``stored``: durable now. ``queued``: accepted, ``operation_id`` names the pending work
    (refresh with ``Provider.refresh``). ``rejected``: refused, ``reason`` says why; nothing
    was written. ``unknown``: the write may or may not have happened. ``failed``: a queued
    operation that the provider reports as failed.
    """

    model_config = _FROZEN

    status: ReceiptStatus
    operation_id: str | None = None
    reason: str | None = None
    id: str | None = None
    path: str | None = None
    scope: str
    removed: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _truth(self) -> Receipt:
        if self.status is ReceiptStatus.QUEUED and not self.operation_id:
            raise ValueError("a queued receipt needs an operation id")
        if self.status in (ReceiptStatus.REJECTED, ReceiptStatus.FAILED) and not self.reason:
            raise ValueError(f"a {self.status.value} receipt needs a reason")
        return self

    def to_json(self) -> dict[str, Any]:
        """The CLI shape: ``{"status","operation_id","reason","id","path","scope"}``."""
        return {
            "status": self.status.value,
            "operation_id": self.operation_id,
            "reason": self.reason,
            "id": self.id,
            "path": self.path,
            "scope": self.scope,
        }


class RecallItem(BaseModel):
    """One recalled item. ``score``: higher is better (provider-relative, not comparable
    across providers). ``snippet``: a short extract containing the match. ``text``: the
    fuller text a host may quote into a prompt (may equal the snippet)."""

    model_config = _FROZEN

    id: str
    title: str
    path: str | None = None
    score: float
    snippet: str
    text: str | None = None
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "score": self.score,
            "snippet": self.snippet,
        }


class RecallResult(BaseModel):
    """Ranked recall results. ``complete`` is ``False`` when more matched than returned or a
    part of the store could not be searched (each reason in ``degraded``)."""

    model_config = _FROZEN

    scope: str
    items: tuple[RecallItem, ...] = ()
    complete: bool = True
    degraded: tuple[str, ...] = ()
    next_cursor: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "items": [i.to_json() for i in self.items],
            "complete": self.complete,
            "degraded": list(self.degraded),
        }


class Reflection(BaseModel):
    """An answer reasoned over memory, with the items it was based on."""

    model_config = _FROZEN

    scope: str
    text: str
    based_on: tuple[RecallItem, ...] = ()
    degraded: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "text": self.text,
            "based_on": [i.to_json() for i in self.based_on],
            "degraded": list(self.degraded),
        }


class PageSummary(BaseModel):
    """A page in a list. For file providers ``id`` and ``path`` are the POSIX path relative to
    the store root, with ``.md``."""

    model_config = _FROZEN

    id: str
    title: str
    path: str | None = None
    etag: str | None = None
    updated: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "path": self.path}


class PageList(BaseModel):
    """One page of a page listing. ``next_cursor`` is opaque; ``complete`` is ``True`` only when
    this is the last page and nothing was skipped."""

    model_config = _FROZEN

    items: tuple[PageSummary, ...] = ()
    next_cursor: str | None = None
    complete: bool = True
    degraded: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "items": [i.to_json() for i in self.items],
            "next_cursor": self.next_cursor,
            "complete": self.complete,
        }


class Page(BaseModel):
    """One page. ``etag`` is a content hash for optimistic concurrency; ``provenance`` says where
    the content came from (sources, who remembered it)."""

    model_config = _FROZEN

    id: str
    title: str
    path: str | None = None
    frontmatter: dict[str, Any] = Field(default_factory=dict)
    body: str
    etag: str | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "frontmatter": self.frontmatter,
            "body": self.body,
            "etag": self.etag,
            "provenance": self.provenance,
        }

    def summary(self) -> PageSummary:
        return PageSummary(id=self.id, title=self.title, path=self.path, etag=self.etag)


class LinkResolution(StrEnum):
    """How a link's target was found (Obsidian rules; see ``goat_core.links``).

    ``exact``: a folder-qualified path matched. ``name``: a bare name matched one file by file
    name. ``ambiguous``: a bare name matched several files; the one Obsidian picks is the
    target. ``missing``: no note (Obsidian shows it unresolved). ``attachment``: a link to a
    non-Markdown file. ``self``: a same-note heading or block link (``[[#Heading]]``).
    """

    EXACT = "exact"
    NAME = "name"
    AMBIGUOUS = "ambiguous"
    MISSING = "missing"
    ATTACHMENT = "attachment"
    SELF = "self"


class Link(BaseModel):
    """One link as written in a page.

    :param raw: the link exactly as written (``[[Note|alias]]``, ``[t](a%20b.md)``).
    :param kind: ``wikilink`` or ``markdown``.
    :param target_text: the link target as written, decoded, without heading or block.
    :param target: the resolved page id; for ``attachment`` the attachment's store path (never a
        page node); ``None`` when missing.
    :param line: 1-based line number in the body.
    """

    model_config = _FROZEN

    raw: str
    kind: Literal["wikilink", "markdown"]
    target_text: str
    target: str | None = None
    alias: str | None = None
    heading: str | None = None
    block: str | None = None
    embed: bool = False
    line: int
    resolution: LinkResolution = LinkResolution.MISSING


class Edge(BaseModel):
    """A map edge; ``target`` is ``None`` for a missing note. ``raw`` is the link as written."""

    model_config = _FROZEN

    source: str
    target: str | None
    raw: str
    resolution: LinkResolution

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "raw": self.raw,
            "resolution": self.resolution.value,
        }


class LinkMap(BaseModel):
    """All pages as nodes and every link as an edge."""

    model_config = _FROZEN

    nodes: tuple[PageSummary, ...] = ()
    edges: tuple[Edge, ...] = ()
    degraded: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [n.to_json() for n in self.nodes],
            "edges": [e.to_json() for e in self.edges],
        }


class Connections(BaseModel):
    """A page's outgoing links and its backlinks (edges whose target is this page)."""

    model_config = _FROZEN

    page: PageSummary
    outgoing: tuple[Link, ...] = ()
    backlinks: tuple[Edge, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "page": self.page.to_json(),
            "outgoing": [link.model_dump(mode="json") for link in self.outgoing],
            "backlinks": [e.to_json() for e in self.backlinks],
        }


class Tone(StrEnum):
    """Status tones (DESIGN section 4): ``quiet`` healthy default, ``accent`` valid but
    non-default, ``warn`` broken (with a reason), ``dim`` intentionally off."""

    QUIET = "quiet"
    ACCENT = "accent"
    WARN = "warn"
    DIM = "dim"


#: Why a check failed (DESIGN section 4 status tones): ``auth`` (the credential was refused;
#: no automatic retry until the configuration changes or the user checks again),
#: ``bank_not_found`` (the server does not know the bank or store), ``unreachable`` (no
#: connection, a broken transport or a deadline), ``missing_tools`` (the server lacks an
#: operation the provider needs), ``legacy`` (a legacy binding that fails closed).
HealthCause = Literal["auth", "bank_not_found", "unreachable", "missing_tools", "legacy"]


class Health(BaseModel):
    """A provider's health: ``ok`` plus a tone and a one-line reason.

    :param cause: for a failed check, why (:data:`HealthCause`); ``None`` when healthy or
        when the provider cannot tell (the connection supervisor then treats it as
        ``unreachable``).
    """

    model_config = _FROZEN

    ok: bool
    tone: Tone
    reason: str = ""
    checked_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    cause: HealthCause | None = None

    @classmethod
    def healthy(cls, reason: str = "ok") -> Health:
        return cls(ok=True, tone=Tone.QUIET, reason=reason)

    @classmethod
    def broken(cls, reason: str, cause: HealthCause | None = None) -> Health:
        return cls(ok=False, tone=Tone.WARN, reason=reason, cause=cause)


class PluginLoadFailure(BaseModel):
    """A plugin that failed to load: ``error`` is ``Type: message``, ``traceback`` the full
    formatted traceback, ``kind`` one of ``import``, ``register``, ``duplicate``,
    ``incompatible``, ``hook``."""

    model_config = _FROZEN

    plugin: str
    distribution: str | None = None
    version: str | None = None
    value: str | None = None
    kind: str
    error: str
    traceback: str | None = None


class PluginInfo(BaseModel):
    """A loaded plugin, as ``goat plugins`` lists it."""

    model_config = _FROZEN

    name: str
    distribution: str | None = None
    version: str | None = None
    builtin: bool = False
    hooks: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    capabilities: dict[str, list[str]] = Field(default_factory=dict)
