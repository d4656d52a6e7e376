"""The host API for synchronous callers: :class:`SyncMemoryHost` runs a :class:`MemoryHost`
on an anyio blocking portal, and hands out :class:`SyncMemoryContext` facades."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from goat_core.contract import (
    Binding,
    Connections,
    Health,
    LinkMap,
    Page,
    PageList,
    ProjectRecord,
    Provider,
    ProviderSpec,
    RecallResult,
    Receipt,
    Reflection,
    Scope,
    ScopeRequest,
    TransferReport,
)
from goat_core.contract._home import GoatHome
from goat_core.host._config import Config
from goat_core.host._context import MemoryContext
from goat_core.host._memoryhost import MemoryHost
from goat_core.host._records import BindingStatus, BindOutcome, Chat
from goat_core.host._tools import ToolSet
from goat_core.host._turn import TurnMemory
from goat_core.plugins import Registry

T = TypeVar("T")


class _Runner(Protocol):
    """How a :class:`SyncMemoryContext` runs a coroutine function: on the host's portal."""

    def __call__(self, fn: Callable[..., Awaitable[T]], /, *a: Any, **kw: Any) -> T: ...


class SyncMemoryContext:
    """Blocking facade of a :class:`MemoryContext`: the same properties, and every coroutine
    method as a method that blocks until the host's event loop has run it.

    :param context: the context. :param call: runs a coroutine function on the portal that
        owns the context's host (:meth:`SyncMemoryHost._run`).
    """

    def __init__(self, context: MemoryContext, call: _Runner) -> None:
        self.context = context
        self._call = call

    def __repr__(self) -> str:
        return f"<Sync{self.context!r}>"

    # -- what the context serves --------------------------------------------------------------
    @property
    def _provider(self) -> Provider | None:
        """The provider in use now (private to the host, as on :class:`MemoryContext`)."""
        return self.context._provider

    @property
    def scope(self) -> Scope:
        return self.context.scope

    @property
    def binding(self) -> Binding | None:
        return self.context.binding

    @property
    def spec(self) -> ProviderSpec | None:
        return self.context.spec

    @property
    def state(self) -> Literal["on", "off", "unavailable"]:
        return self.context.state

    @property
    def reason(self) -> str | None:
        return self.context.reason

    @property
    def available(self) -> bool:
        return self.context.available

    @property
    def label(self) -> str:
        return self.context.label

    def serves(self, chat: Chat) -> bool:
        return self.context.serves(chat)

    def tools(self) -> ToolSet:
        """The context's model-facing tools (:meth:`ToolSet.call` stays a coroutine)."""
        return self.context.tools()

    # -- operations ---------------------------------------------------------------------------
    def run_operation(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._call(self.context.run_operation, name, *args, **kwargs)

    def remember(
        self,
        text: str,
        *,
        title: str | None = None,
        source: str = "api",
        tags: Iterable[str] = (),
    ) -> Receipt:
        return self._call(self.context.remember, text, title=title, source=source, tags=tags)

    def feedback(self, text: str, *, on: str | None = None, source: str = "api") -> Receipt:
        return self._call(self.context.feedback, text, on=on, source=source)

    def forget(self, ref: str) -> Receipt:
        return self._call(self.context.forget, ref)

    def refresh(self, receipt: Receipt) -> Receipt:
        return self._call(self.context.refresh, receipt)

    def recall(self, query: str, *, limit: int = 10, max_tokens: int | None = None) -> RecallResult:
        return self._call(self.context.recall, query, limit=limit, max_tokens=max_tokens)

    def reflect(self, query: str) -> Reflection:
        return self._call(self.context.reflect, query)

    def list_pages(self, limit: int = 50, cursor: str | None = None) -> PageList:
        return self._call(self.context.list_pages, limit, cursor)

    def get_page(self, ref: str) -> Page:
        return self._call(self.context.get_page, ref)

    def link_map(self) -> LinkMap:
        return self._call(self.context.link_map)

    def connections(self, ref: str) -> Connections:
        return self._call(self.context.connections, ref)

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        return self._call(self.context.reindex, progress)

    def check(self) -> Health:
        return self._call(self.context.check)

    def prepare_turn(self, prompt: str, budget: int) -> TurnMemory:
        return self._call(self.context.prepare_turn, prompt, budget)


class SyncMemoryHost:
    """:class:`MemoryHost` for synchronous callers (the ``goat`` CLI).

    Runs an event loop in a portal thread (anyio blocking portal); methods take the same
    arguments and return the same values, contexts come back as :class:`SyncMemoryContext`.
    Use as a context manager or call :meth:`close`.
    """

    def __init__(
        self,
        *,
        home: GoatHome | None = None,
        registry: Registry | None = None,
        config: Config | None = None,
        progress: Callable[[int, int], None] | None = None,
        embed_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        import anyio.from_thread

        self.host = MemoryHost(
            home=home,
            registry=registry,
            config=config,
            progress=progress,
            embed_progress=embed_progress,
        )
        self._cm: Any = anyio.from_thread.start_blocking_portal()
        self._portal = self._cm.__enter__()
        # the host (and its supervisor's task group) lives as long as the portal: shared
        # checks run in tasks it owns, not in the blocking caller
        self._entered: Any = self._portal.wrap_async_context_manager(self.host)
        try:
            self._entered.__enter__()
        except BaseException:
            self._cm.__exit__(None, None, None)
            raise

    def _run(self, fn: Callable[..., Awaitable[T]], *a: Any, **kw: Any) -> T:
        """Await ``fn(*a, **kw)`` on the portal's event loop and return its result."""
        if self._cm is None:
            raise RuntimeError("SyncMemoryHost is closed")

        async def run() -> T:
            return await fn(*a, **kw)

        return self._portal.call(run)  # type: ignore[no-any-return]

    def _sync(self, fn: Callable[..., T], *a: Any) -> T:
        """Run a synchronous host method on the portal's thread."""
        if self._cm is None:
            raise RuntimeError("SyncMemoryHost is closed")
        return self._portal.call(lambda: fn(*a))  # type: ignore[no-any-return]

    def _wrap(self, context: MemoryContext) -> SyncMemoryContext:
        return SyncMemoryContext(context, self._run)

    @property
    def home(self) -> GoatHome:
        return self.host.home

    @property
    def registry(self) -> Registry:
        return self.host.registry

    @property
    def config(self) -> Config:
        return self.host.config

    def resolve(self, chat: Chat) -> Scope:
        return self.host.resolve(chat)

    def context_for(self, chat: Chat) -> SyncMemoryContext:
        return self._wrap(self._sync(self.host.context_for, chat))

    def settings_browser(self) -> SyncMemoryContext:
        return self._wrap(self._sync(self.host.settings_browser))

    def pen_browser(self, pen_id: str) -> SyncMemoryContext:
        return self._wrap(self._sync(self.host.pen_browser, pen_id))

    def prepare_turn(self, chat: Chat, prompt: str, budget: int) -> TurnMemory:
        return self._run(self.host.prepare_turn, chat, prompt, budget)

    def adopt(self, scope: Scope, project: ProjectRecord) -> Path:
        return self._run(self.host.adopt, scope, project)

    def bind(
        self,
        scope: Scope,
        provider_name: str,
        settings: dict[str, Any],
        *,
        api_key: str | None = None,
        connect: bool = True,
        project: ProjectRecord | None = None,
    ) -> BindOutcome:
        return self._run(
            self.host.bind,
            scope,
            provider_name,
            settings,
            api_key=api_key,
            connect=connect,
            project=project,
        )

    def unbind(self, scope: Scope) -> Path:
        return self._run(self.host.unbind, scope)

    def set_enabled(self, scope: Scope, enabled: bool) -> Path:
        return self._run(self.host.set_enabled, scope, enabled)

    def check(
        self,
        scope: Scope,
        *,
        draft: dict[str, Any] | None = None,
        provider: str | None = None,
        api_key: str | None = None,
    ) -> Health:
        return self._run(self.host.check, scope, draft=draft, provider=provider, api_key=api_key)

    def status(self, *, request: ScopeRequest | None = None) -> list[BindingStatus]:
        return self._sync(lambda: self.host.status(request=request))

    def refresh(
        self, *, request: ScopeRequest | None = None, timeout: float | None = 10.0
    ) -> list[BindingStatus]:
        return self._run(self.host.refresh, request=request, timeout=timeout)

    def copy_pages(
        self,
        refs: Sequence[str],
        *,
        source: Scope,
        destination: Scope,
        rename: bool = False,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> TransferReport:
        return self._run(
            self.host.copy_pages,
            refs,
            source=source,
            destination=destination,
            rename=rename,
            dry_run=dry_run,
            progress=progress,
        )

    def export_bundle(
        self,
        scope: Scope,
        directory: Path,
        *,
        force: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> TransferReport:
        return self._run(self.host.export_bundle, scope, directory, force=force, progress=progress)

    def import_bundle(
        self,
        directory: Path,
        scope: Scope,
        *,
        rename: bool = False,
        dry_run: bool = False,
        resend_unknown: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> TransferReport:
        return self._run(
            self.host.import_bundle,
            directory,
            scope,
            rename=rename,
            dry_run=dry_run,
            resend_unknown=resend_unknown,
            progress=progress,
        )

    def close(self) -> None:
        """Close providers, disconnect remote sessions and stop the portal. Idempotent."""
        if self._cm is None:
            return
        try:
            self._entered.__exit__(None, None, None)
        finally:
            cm, self._cm = self._cm, None
            cm.__exit__(None, None, None)

    def __enter__(self) -> SyncMemoryHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
