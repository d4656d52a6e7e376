"""A synchronous facade over a :class:`~goat_core.contract.Provider`, for the CLI and scripts
(docs/design.md, Hosts and tools).

Like the host's facade (``goat_core/host/_sync.py``), it is typed: every coroutine method of
:class:`Provider` has a blocking method here with the same parameters and result, and
``tests/test_exports.py`` holds the two to each other. A provider's own coroutine methods
(a wiki's ``lint``) are run with :meth:`SyncProvider.call`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio.from_thread

from goat_core.contract._extras import ModelTool, ProviderOperation
from goat_core.contract._health import Health
from goat_core.contract._provider import Provider, ProviderSpec
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

T = TypeVar("T")


class SyncProvider:
    """Synchronous facade over a :class:`Provider` for the CLI and scripts.

    Runs an event loop in a portal thread (anyio blocking portal, asyncio); each method
    blocks until the provider's coroutine has run there and returns its result. A call is
    handed to that loop with ``asyncio.run_coroutine_threadsafe`` (a task of its own, as
    the portal would start one, for about a third of the portal's own cost per call); the
    portal starts and stops the loop. :attr:`provider` is the provider itself. Use as a
    context manager, or call :meth:`close`.

    :param factory: the provider, or ``factory() -> Provider`` (called on this thread).
    """

    def __init__(self, factory: Callable[[], Provider] | Provider) -> None:
        self._cm: Any = anyio.from_thread.start_blocking_portal()
        self._portal = self._cm.__enter__()
        try:
            self._loop: asyncio.AbstractEventLoop = self._portal.call(asyncio.get_running_loop)
            self._loop_thread: int = self._portal.call(threading.get_ident)
            self.provider = factory if isinstance(factory, Provider) else factory()
        except BaseException:
            self._cm.__exit__(None, None, None)
            raise

    def __repr__(self) -> str:
        return f"<Sync{self.provider!r}>"

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Await ``fn(*args, **kwargs)`` on the portal's event loop and return its result
        (for a provider's own coroutine methods: ``sp.call(sp.provider.lint, fix=True)``).

        :raises RuntimeError: the facade is closed, or the call comes from its own event
            loop's thread (it would wait on itself forever).
        """
        if self._cm is None:
            raise RuntimeError("SyncProvider is closed")
        if threading.get_ident() == self._loop_thread:
            raise RuntimeError("SyncProvider cannot be called from its own event loop's thread")

        async def run() -> T:
            return await fn(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    # -- identity -----------------------------------------------------------------------------
    @property
    def spec(self) -> ProviderSpec:
        return self.provider.spec

    @property
    def scope(self) -> Scope:
        return self.provider.scope

    def label(self) -> str:
        return self.provider.label()

    def transport_fingerprint(self) -> str | None:
        return self.provider.transport_fingerprint()

    def model_tools(self) -> Sequence[ModelTool]:
        return self.provider.model_tools()

    def operations(self) -> Sequence[ProviderOperation]:
        return self.provider.operations()

    # -- writes -------------------------------------------------------------------------------
    def remember(self, write: MemoryWrite) -> Receipt:
        return self.call(self.provider.remember, write)

    def feedback(self, write: MemoryWrite) -> Receipt:
        return self.call(self.provider.feedback, write)

    def forget(self, ref: str) -> Receipt:
        return self.call(self.provider.forget, ref)

    def refresh(self, receipt: Receipt) -> Receipt:
        return self.call(self.provider.refresh, receipt)

    # -- reads --------------------------------------------------------------------------------
    def recall(self, query: str, *, limit: int = 10, max_tokens: int | None = None) -> RecallResult:
        """As :meth:`Provider.recall`; ``max_tokens`` is passed on only when given (to a
        provider that counts tokens, ``ProviderSpec.counts_tokens``). Without it the
        provider may answer on this thread (``Provider._recall_now``: a folder store whose
        worker is idle), sparing the hops to the event loop and back."""
        if max_tokens is None:
            if self._cm is not None and threading.get_ident() != self._loop_thread:
                now = self.provider._recall_now(query, limit)
                if now is not None:
                    return now
            return self.call(self.provider.recall, query, limit=limit)
        return self.call(self.provider.recall, query, limit=limit, max_tokens=max_tokens)

    def reflect(self, query: str) -> Reflection:
        return self.call(self.provider.reflect, query)

    def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> PageList:
        return self.call(self.provider.list_pages, limit=limit, cursor=cursor)

    def get_page(self, ref: str) -> Page:
        return self.call(self.provider.get_page, ref)

    def link_map(self) -> LinkMap:
        return self.call(self.provider.link_map)

    def connections(self, ref: str) -> Connections:
        return self.call(self.provider.connections, ref)

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        return self.call(self.provider.reindex, progress)

    # -- health and lifetime ------------------------------------------------------------------
    def check(self) -> Health:
        return self.call(self.provider.check)

    def close(self) -> None:
        """Close the provider and stop the portal. Idempotent."""
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
