"""The provider interface: one async instance bound to one scope's store (or one shared bank).

A provider is built by its :class:`~goat_core.models.ProviderSpec` factory from a
:class:`ProviderContext`. Every operation is ``async`` (anyio: asyncio or trio). Operations
the spec does not declare raise :class:`~goat_core.errors.NotSupported`; the base class
does that for every optional operation, so a provider overrides only what it declares.

File providers run blocking I/O off the event loop through a :class:`StoreWorker` (one
worker thread per store, owning its SQLite connection). :class:`SyncProvider` wraps a
provider for synchronous callers such as the CLI.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread

from goat_core.errors import NotSupported
from goat_core.models import (
    Binding,
    Capability,
    Connections,
    Health,
    LinkMap,
    MemoryWrite,
    Page,
    PageList,
    PageSummary,
    ProviderSpec,
    RecallResult,
    Receipt,
    Reflection,
    Scope,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from goat_core.home import GoatHome

__all__ = [
    "Access",
    "ModelTool",
    "PolicyGate",
    "ProviderOperation",
    "Provider",
    "ProviderContext",
    "StoreWorker",
    "SyncProvider",
]

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class ProviderContext:
    """Everything a provider factory receives. Nothing here opens a connection.

    :param scope: the one scope this instance serves.
    :param binding: the binding it was built from (the embedded default is a synthetic
        binding with id ``"default"``).
    :param settings: the binding's settings, validated against ``spec.settings_model``.
    :param home: GOAT's directories (index and lock files live there, never in a store).
    :param get_credential: ``get_credential(name) -> str | None`` reads a declared secret
        from the credential store (env override first). Call it when connecting, not earlier.
    :param http_client: ``http_client(**kwargs) -> httpx2.AsyncClient`` whose transport asks
        the egress guard on every request; ``None`` for providers that declare no network use.
    :param progress: the host's progress sink for long store work that a read may trigger
        (a first indexing), called as ``progress(done, total)`` in files, possibly from the
        store's worker thread; ``None`` when the host shows none. A provider may ignore it;
        an explicit ``reindex(progress=...)`` takes its own callback instead.
    """

    scope: Scope
    binding: Binding
    settings: BaseModel
    home: GoatHome
    get_credential: Callable[[str], str | None] = field(default=lambda name: None, repr=False)
    http_client: Callable[..., Any] | None = field(default=None, repr=False)
    progress: Callable[[int, int], None] | None = field(default=None, repr=False)


class Access(StrEnum):
    """What a provider's extra tool or operation does to its store.

    ``read``: it shows stored content; whatever it shows passes ``goat_filter_recall`` or
    ``goat_filter_browse`` through its :class:`PolicyGate`. ``write``: it stores content;
    the exact text it stores passes ``goat_inspect_remember`` first (docs/design.md,
    Policy path).
    """

    READ = "read"
    WRITE = "write"


class PolicyGate(Protocol):
    """The handle a provider's extra tools and operations get instead of the host: the scope's
    policy hooks, bound to one scope and one call (docs/design.md, Policy path).

    The host builds one per call. A ``read`` call must pass what it shows through
    :meth:`recall`, :meth:`browse`, :meth:`pages` or :meth:`page` (a read whose result
    passed none of them is refused as a provider defect, :class:`~goat_core.errors.ConfigError`);
    a ``write`` call must pass the exact text it stores through :meth:`inspect` or
    :meth:`write`. A ``read`` call that tries to write is refused the same way.
    """

    @property
    def scope(self) -> Scope:
        """The one scope this call serves."""
        ...

    @property
    def label(self) -> str:
        """How the host names the store (``"Global memory"``, a shared bank's label...)."""
        ...

    def inspect(self, write: MemoryWrite) -> MemoryWrite:
        """Run ``goat_inspect_remember``; store the returned write's text, not the original.

        Synchronous and I/O-free, so a store's worker thread may call it. Size limits stay the
        provider's to enforce (``max_input_chars`` for page text, its own for other content).

        :raises Rejected: a policy hook refused; store nothing.
        """
        ...

    async def write(
        self, write: MemoryWrite, store: Callable[[MemoryWrite], Awaitable[T]]
    ) -> T | Receipt:
        """:meth:`inspect`, then ``await store(inspected_write)``; a refusal returns a
        ``rejected`` :class:`~goat_core.models.Receipt` and ``store`` is never called."""
        ...

    def recall(self, query: str, result: RecallResult) -> RecallResult:
        """Run ``goat_filter_recall`` over a recall result. :raises Rejected: refused."""
        ...

    def browse(self, items: Sequence[PageSummary]) -> tuple[PageSummary, ...]:
        """Run ``goat_filter_browse``; returns the pages that may be shown."""
        ...

    def pages(self, listing: PageList) -> PageList:
        """A page listing through ``goat_filter_browse``; hidden pages make it
        ``complete=False`` with the reason ``"<n> pages hidden by policy"``."""
        ...

    def page(self, page: Page) -> Page:
        """One page through ``goat_filter_browse``. :raises NotFound: the policy hides it."""
        ...


@dataclass(frozen=True)
class ModelTool:
    """An extra model-facing tool a provider contributes (e.g. wiki page writes).

    :param name: tool name, ``[a-z][a-z0-9_]*``.
    :param description: what the model is told.
    :param input_schema: JSON schema of the arguments; must not take a scope, Pen, bank, URL
        or path of another store (the host checks the property names at any depth).
    :param handler: ``await handler(arguments, gate) -> JSON-able dict``; ``gate`` is the
        call's :class:`PolicyGate`, the tool's only way to the scope's policy.
    :param read_only: kept for compatibility; must agree with ``access`` when given.
    :param destructive: may remove or overwrite content.
    :param access: :class:`Access` ``read`` or ``write``. Required: a tool that declares
        neither is refused when the host builds the tool set (``ConfigError``).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[dict[str, Any], PolicyGate], Awaitable[dict[str, Any]]]
    read_only: bool = False
    destructive: bool = False
    access: Access | None = None


@dataclass(frozen=True)
class ProviderOperation:
    """A provider-specific operation a plugin's CLI command runs (e.g. ``goat wiki ingest``).

    Commands never get the provider: they call
    ``MemoryContext.run_operation(name, *args, **kwargs)``, which runs
    ``await handler(gate, *args, **kwargs)`` with a :class:`PolicyGate` under the same rules
    as :class:`ModelTool` (docs/design.md, Policy path).

    :param name: operation name, ``[a-z][a-z0-9_]*``.
    :param access: :class:`Access`; required.
    :param handler: ``await handler(gate, *args, **kwargs)``.
    """

    name: str
    access: Access
    handler: Callable[..., Awaitable[Any]]


class Provider:
    """Base class of every provider. Subclasses set :attr:`spec` and override what they declare.

    Required for all: :meth:`remember`, :meth:`recall`, :meth:`forget`, :meth:`check`.
    ``pages``: :meth:`list_pages`, :meth:`get_page`. ``map``: :meth:`link_map`,
    :meth:`connections`. ``reflect``: :meth:`reflect`. ``feedback``: :meth:`feedback`.
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
        credential itself). ``None`` for local providers."""
        return None

    def _unsupported(self, capability: Capability | str, operation: str) -> NotSupported:
        declared = capability in {c.value for c in self.spec.capabilities}
        why = (
            f"capability {str(capability)!r} is declared but {operation} is not implemented"
            if declared
            else f"capability {str(capability)!r} not declared"
        )
        return NotSupported(f"provider {self.spec.name!r} does not support {operation} ({why})")

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
        """Remove a page; the receipt's ``removed`` lists what was removed.

        :raises NotFound: no such page. :raises Ambiguous: several match.
        """
        raise self._unsupported("forget", "forget")

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
        """A cheap health probe (a local stat, or ``get_bank`` for Hindsight)."""
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


_STOP = object()


class StoreWorker:
    """One worker thread per store; every call for the store runs on it, in order.

    SQLite connections are bound to the thread that made them, so a store's index lives on
    its worker. ``await worker.run(fn, *args)`` runs ``fn`` there without blocking the loop.
    """

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=f"goat-store-{name}", daemon=True)
        self._closed = False
        self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fut, fn, args, kwargs = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # delivered to the awaiting caller
                fut.set_exception(exc)

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        if self._closed:
            raise RuntimeError("store worker is closed")
        fut: Future[T] = Future()
        self._queue.put((fut, fn, args, kwargs))
        return fut

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the worker thread and return its result."""
        if threading.current_thread() is self._thread:
            return fn(*args, **kwargs)
        fut = self.submit(fn, *args, **kwargs)
        return await anyio.to_thread.run_sync(fut.result)

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop after queued work finishes. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)


class SyncProvider:
    """Synchronous facade over a :class:`Provider` for the CLI and scripts.

    Runs an event loop in a portal thread; every attribute that is a coroutine method of the
    provider becomes a blocking call. Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, factory: Callable[[], Provider] | Provider) -> None:
        self._cm: Any = anyio.from_thread.start_blocking_portal()
        self._portal = self._cm.__enter__()
        try:
            self.provider = factory if isinstance(factory, Provider) else factory()
        except BaseException:
            self._cm.__exit__(None, None, None)
            raise

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        return self._portal.call(lambda: fn(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        if name in {"provider", "_portal", "_cm"}:
            raise AttributeError(name)
        attr = getattr(self.provider, name)
        import inspect

        if inspect.iscoroutinefunction(attr):
            return lambda *a, **kw: self.call(attr, *a, **kw)
        return attr

    def close(self) -> None:
        if self._cm is None:
            return
        try:
            self._portal.call(self.provider.close)
        finally:
            cm, self._cm = self._cm, None
            cm.__exit__(None, None, None)

    def __enter__(self) -> SyncProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
