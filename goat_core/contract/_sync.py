"""A synchronous facade over a :class:`~goat_core.contract.Provider`, for the CLI and scripts
(docs/design.md, Hosts and tools)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio.from_thread

from goat_core.contract._provider import Provider

T = TypeVar("T")


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
