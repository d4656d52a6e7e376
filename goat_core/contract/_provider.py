"""The provider contract: what a provider is given, what it declares, and the base class
every provider subclasses (docs/design.md, Bindings and providers).

A provider is built by its :class:`ProviderSpec` factory from a :class:`ProviderContext`.
Every operation is ``async`` (anyio: asyncio or trio). An operation behind a capability the
spec does not declare raises :class:`~goat_core.errors.NotSupported`; the base class does
that for every optional operation, so a provider overrides only what it offers.

:class:`Provider` and :class:`ProviderSpec` refer to each other (a spec's factory builds a
provider; a provider carries its spec), so they share this module; the class is defined
first so the spec's ``factory`` type is a real type, not a forward reference. The context's
``home`` is a :class:`ProviderHome`, the part of GOAT's directories a provider may use, so
the contract does not depend on the host's ``GoatHome``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from goat_core.contract._extras import ModelTool, ProviderOperation
from goat_core.contract._health import Health
from goat_core.contract._records import (
    Connections,
    LinkMap,
    MemoryWrite,
    Page,
    PageList,
    RecallResult,
    Receipt,
    Reflection,
)
from goat_core.contract._scope import Scope
from goat_core.contract._spec import (
    RETIRED_CAPABILITIES,
    Binding,
    Capability,
    Consistency,
    CredentialSpec,
)
from goat_core.errors import NotSupported


class ProviderHome(Protocol):
    """Where a provider keeps what does not belong in its store: search indexes, lock files,
    and the default store folders. Never a place for notes, memory.json or credentials.

    The host passes its ``GoatHome`` (:class:`goat_core.host.GoatHome`), which has all of these.
    """

    @property
    def data_dir(self) -> Path: ...

    @property
    def stores_dir(self) -> Path: ...

    @property
    def index_dir(self) -> Path: ...

    @property
    def lock_dir(self) -> Path: ...

    def default_store_dir(self, scope: Scope) -> Path:
        """The default store folder of a scope (for file providers without a ``root``)."""
        ...

    def store_key(self, root: Path) -> str:
        """A stable short key for a store root (its resolved real path)."""
        ...

    def index_path(self, root: Path, name: str = "search") -> Path:
        """The index file of a store."""
        ...

    def lock_path(self, root: Path, name: str = "store") -> Path:
        """The lock file guarding a store's read-modify-write cycles."""
        ...


@dataclass(frozen=True)
class ProviderContext:
    """Everything a provider factory receives. Nothing here opens a connection.

    :param scope: the one scope this instance serves.
    :param binding: the binding it was built from (the embedded default is a synthetic
        binding with id ``"default"``).
    :param settings: the binding's settings, validated against ``spec.settings_model``.
    :param home: GOAT's directories (index and lock files live there, never in a store).
    :param get_credential: ``get_credential(name) -> str | None`` reads a declared secret
        from the credential store (env override first). Call it when the value is needed
        (connecting; :meth:`Provider.transport_fingerprint` may hash it), never in
        ``__init__``; keep neither the secret nor a digest of it in an attribute.
    :param http_client: ``http_client(**kwargs) -> httpx2.AsyncClient`` whose transport asks
        the egress guard on every request; ``None`` for providers that declare no network use.
    :param progress: the host's progress sink for long store work that a read may trigger
        (a first indexing), called as ``progress(done, total)`` in files, possibly from the
        store's worker thread; ``None`` when the host shows none. A provider may ignore it;
        an explicit ``reindex(progress=...)`` takes its own callback instead.
    :param connect: ``await connect(url, *, timeout=10.0, tls=None) -> anyio.abc.ByteStream``
        opens a TCP connection for a protocol that is not HTTP (``redis://host:port``,
        ``postgresql://host:port/db``) after the egress guard allowed the URL, on every
        connect; a refusal raises :class:`~goat_core.errors.ProviderUnavailable` and never
        reaches the network. ``None`` for providers that declare no network use.
    :param authorize: ``await authorize(url) -> Endpoint(scheme, host, port)`` asks the same
        guard for a driver that opens its own sockets (asyncpg, psycopg, redis-py); call it
        before each connect of the driver and connect to exactly that host and port. A
        refusal raises :class:`~goat_core.errors.ProviderUnavailable`. ``None`` for
        providers that declare no network use.
    :param embedders: ``embedders(name) -> EmbedderSpec`` looks up an installed embedder
        (raises :class:`~goat_core.errors.NotFound`); ``None``: a store that needs one asks
        the plugin registry itself.
    :param rerankers: ``rerankers(name) -> RerankerSpec`` looks up an installed reranker
        (raises :class:`~goat_core.errors.NotFound`); ``None``: a store that needs one
        reranks nothing and says so in ``degraded``.
    :param embed_progress: the host's progress sink while a store embeds notes for semantic
        recall inside a read or a reindex, called as ``embed_progress(done, total)`` in notes
        (first ``(0, total)``, then after each batch), possibly from the store's worker
        thread; ``None`` when the host shows none.
    :param embed_in_background: set by a long-lived host (``goat serve``): a recall that
        finds notes to embed starts embedding them on a thread of the store's own and
        answers at once, ranking with the vectors stored so far (``degraded`` says so),
        rather than waiting minutes for a first embedding. ``False``: the recall embeds
        them first (the CLI, with its progress bar).
    """

    scope: Scope
    binding: Binding
    settings: BaseModel
    home: ProviderHome
    get_credential: Callable[[str], str | None] = field(default=lambda name: None, repr=False)
    http_client: Callable[..., Any] | None = field(default=None, repr=False)
    progress: Callable[[int, int], None] | None = field(default=None, repr=False)
    connect: Callable[..., Awaitable[Any]] | None = field(default=None, repr=False)
    authorize: Callable[[str], Awaitable[Any]] | None = field(default=None, repr=False)
    embedders: Callable[[str], Any] | None = field(default=None, repr=False)
    rerankers: Callable[[str], Any] | None = field(default=None, repr=False)
    embed_progress: Callable[[int, int], None] | None = field(default=None, repr=False)
    embed_in_background: bool = False


class Provider:
    """Base class of every provider. Subclasses set :attr:`spec` and override what they offer.

    Required of every provider: :meth:`remember`, :meth:`recall`, :meth:`check` (the base
    raises ``NotImplementedError``).

    Behind a declared capability (the base raises
    :class:`~goat_core.errors.NotSupported`): ``pages``: :meth:`list_pages`,
    :meth:`get_page`; ``map``: :meth:`link_map`, :meth:`connections`; ``reflect``:
    :meth:`reflect`; ``feedback``: :meth:`feedback`.

    Optional, with no capability: :meth:`forget` (the base raises ``NotSupported``; a store
    GOAT deletes nothing from, such as a shared bank, keeps that), :meth:`refresh` (the base
    returns the receipt unchanged), :meth:`reindex` (no local index: ``{}``),
    :meth:`model_tools` and :meth:`operations` (none), :meth:`close` (nothing to release).
    """

    spec: ProviderSpec

    def __init__(self, context: ProviderContext) -> None:
        self.context = context

    # -- identity ---------------------------------------------------------------------------
    @property
    def scope(self) -> Scope:
        return self.context.scope

    def label(self) -> str:
        """How a host names this store. Shared-bank providers return
        ``"shared bank `<bank>` on `<server>`"`` whatever scope selected them."""
        if self.context.scope.is_global:
            return "Global memory"
        return f"Pen `{self.context.scope.pen_id}` memory"

    def transport_fingerprint(self) -> str | None:
        """For remote providers: a stable digest of server, bank and credential (never the
        credential itself). ``None`` for local providers.

        Synchronous: the host's connection supervisor calls it on the event loop, so it does
        no I/O. It may read the credential and hash it each time it is called.
        """
        return None

    def _unsupported(self, capability: Capability | str | None, operation: str) -> NotSupported:
        """The :class:`NotSupported` for ``operation``; ``capability`` is the capability
        behind it, or ``None`` (or any name that is no capability) for an optional operation
        such as ``forget``."""
        prefix = f"provider {self.spec.name!r} does not support {operation}"
        if capability is None or capability not in {c.value for c in Capability}:
            return NotSupported(prefix)
        declared = capability in {c.value for c in self.spec.capabilities}
        why = (
            f"capability {str(capability)!r} is declared but {operation} is not implemented"
            if declared
            else f"capability {str(capability)!r} not declared"
        )
        return NotSupported(f"{prefix} ({why})")

    # -- writes -------------------------------------------------------------------------------
    async def remember(self, write: MemoryWrite) -> Receipt:
        """Store ``write`` (kind ``remember``). Returns a truthful :class:`Receipt`.

        :raises TooLarge: text over ``spec.max_input_chars``; nothing stored.
        :raises Conflict: a concurrent change or a case-only twin.
        """
        raise NotImplementedError

    async def feedback(self, write: MemoryWrite) -> Receipt:
        """Store feedback (kind ``feedback``, optionally ``on`` a page). Capability ``feedback``."""
        raise self._unsupported(Capability.FEEDBACK, "feedback")

    async def forget(self, ref: str) -> Receipt:
        """Remove a page; the receipt's ``removed`` lists what was removed. Optional: no
        capability stands for it, and the base raises :class:`NotSupported`.

        :raises NotFound: no such page. :raises Ambiguous: several match.
        """
        raise self._unsupported(None, "forget")

    async def refresh(self, receipt: Receipt) -> Receipt:
        """Refresh a ``queued`` receipt to ``stored`` or ``failed`` where the provider can
        tell; returns it unchanged otherwise."""
        return receipt

    # -- reads --------------------------------------------------------------------------------
    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        """Ranked results for user text (never query syntax). ``limit`` 1..100."""
        raise NotImplementedError

    async def reflect(self, query: str) -> Reflection:
        """Reason over memory. Capability ``reflect``."""
        raise self._unsupported(Capability.REFLECT, "reflect")

    async def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> PageList:
        """Pages ordered by path (case-insensitive); never a silent cap. Capability ``pages``."""
        raise self._unsupported(Capability.PAGES, "list_pages")

    async def get_page(self, ref: str) -> Page:
        """One page by id, path (with or without ``.md``) or unique title / file name
        (case-insensitive). Capability ``pages``.

        :raises NotFound: nothing matches. :raises Ambiguous: several match (``candidates``).
        """
        raise self._unsupported(Capability.PAGES, "get_page")

    async def link_map(self) -> LinkMap:
        """All pages and links with resolution. Capability ``map``."""
        raise self._unsupported(Capability.MAP, "link_map")

    async def connections(self, ref: str) -> Connections:
        """A page's outgoing links and backlinks. Capability ``map``."""
        raise self._unsupported(Capability.MAP, "connections")

    async def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Bring a local index up to date; returns counts (``indexed``, ``removed``, ...).
        ``progress(done, total)`` may be called from a worker thread."""
        return {}

    def model_tools(self) -> Sequence[ModelTool]:
        """Extra model-facing tools bound to this store (default: none). Each declares its
        :class:`Access`; the host runs it with a :class:`PolicyGate`, never exposing the
        provider to the model."""
        return ()

    def operations(self) -> Sequence[ProviderOperation]:
        """Provider-specific operations for the plugin's own CLI commands (default: none),
        run through ``MemoryContext.run_operation`` with a :class:`PolicyGate`."""
        return ()

    # -- health and lifetime ----------------------------------------------------------------
    async def check(self) -> Health:
        """A cheap health probe (a local stat, or one request to the server).

        Report a failure as a broken :class:`Health` rather than raising:
        ``Health.from_error(exc, label=self.label())`` turns a caught error into one with
        the right cause. An error that escapes is reported the same way by the host.
        """
        raise NotImplementedError

    async def close(self) -> None:
        """Release files, threads and connections. Idempotent."""
        return None

    async def __aenter__(self) -> Provider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.name} scope={self.scope.key}>"


class ProviderSpec(BaseModel):
    """What a plugin declares about one provider (returned by ``goat_register_providers``).

    :param name: the provider name users type (``goat bind --pen x markdown``).
    :param capabilities: declared capabilities; exactly one of ``scoped_stores`` and
        ``shared_bank``. The first release's ``lint``, ``ingest`` and ``export`` (given as
        strings) are dropped with a ``DeprecationWarning`` naming them.
    :param consistency: ``immediate`` or ``eventual`` (recall may lag remember).
    :param settings_model: pydantic model (``extra="forbid"``) validated by ``goat bind``;
        its JSON schema renders host settings forms.
    :param credentials: declared secrets; values never enter settings.
    :param network: ``True`` when the provider opens network connections (egress guarded).
    :param factory: ``factory(context) -> Provider``; imports heavy modules lazily.
    :param egress_urls: ``egress_urls(settings) -> [url, ...]``, the URL prefixes an explicit
        bind authorises (remote providers only).
    :param max_input_chars: largest text remember/feedback accepts; larger is ``TooLarge``.
    :param extracts_facts: the provider keeps facts it extracts from a text rather than the
        text itself (as Hindsight does), so ``get_page`` and recall need not return a stored
        text whole; the suite then skips its whole-text round trip, saying so.
    :param title_lookup: ``get_page`` also opens a page by its unique title
        (case-insensitive, NFC); the suite tests it when declared.
    :param duplicate_policy: what remembering identical text N times yields: ``"keep"`` (N
        results) or ``"merge"`` (at least one); the conformance suite holds it to this.
    :param counts_tokens: the provider's ``recall`` takes ``max_tokens`` (the most tokens of
        recalled text the caller will use); the host then passes a turn's budget in tokens
        (characters / 4) instead of trimming characters only.
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
    max_input_chars: int = 100_000
    extracts_facts: bool = False
    title_lookup: bool = False
    duplicate_policy: Literal["keep", "merge"] = "keep"
    counts_tokens: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_-]{0,31}", v):
            raise ValueError(f"provider name {v!r} must match [a-z][a-z0-9_-]{{0,31}}")
        return v

    @field_validator("capabilities", mode="before")
    @classmethod
    def _retired(cls, v: Any) -> Any:
        """Drop the first release's capabilities (``lint``, ``ingest``, ``export``), saying
        so once, so that a spec written to that documentation still loads."""
        if isinstance(v, str) or not isinstance(v, Iterable):
            return v
        given = list(v)
        retired = sorted(
            {str(c) for c in given if isinstance(c, str) and c in RETIRED_CAPABILITIES}
        )
        if not retired:
            return v
        warnings.warn(
            f"capabilities {', '.join(map(repr, retired))} are no longer part of the "
            "provider contract (no operation backs them) and are ignored; remove them from "
            "the spec (docs/design.md, Bindings and providers)",
            DeprecationWarning,
            stacklevel=2,
        )
        return frozenset(c for c in given if not (isinstance(c, str) and c in RETIRED_CAPABILITIES))

    @model_validator(mode="after")
    def _kinds(self) -> ProviderSpec:
        kinds = {Capability.SCOPED_STORES, Capability.SHARED_BANK} & self.capabilities
        if len(kinds) != 1:
            raise ValueError(
                f"provider {self.name!r} must declare exactly one of scoped_stores, shared_bank"
            )
        return self

    def supports(self, capability: Capability | str) -> bool:
        """Whether ``capability`` is declared (``False`` for a retired one such as ``lint``).

        :raises ValueError: a name that never was a capability.
        """
        if not isinstance(capability, Capability) and capability in RETIRED_CAPABILITIES:
            return False
        return Capability(capability) in self.capabilities

    def settings_schema(self) -> dict[str, Any]:
        """The settings model's JSON schema, for host settings forms."""
        return self.settings_model.model_json_schema()
