"""A provider driven from the blocking code of a benchmark: :class:`Blocking` runs an event
loop in a portal thread (anyio) and each coroutine method of the provider on it, the way a
blocking host hands its calls to a loop; a plain attribute is the provider's own."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import anyio.from_thread


class Blocking:
    """``Blocking(factory)``: ``factory() -> Provider`` is called on this thread; then
    ``store.recall(q, limit=10)`` blocks until the provider's ``recall`` has run on the
    loop. ``store.provider`` is the provider itself. Use as a context manager, or call
    :meth:`close`."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._cm: Any = anyio.from_thread.start_blocking_portal()
        portal = self._cm.__enter__()
        self._loop: asyncio.AbstractEventLoop = portal.call(asyncio.get_running_loop)
        self.provider = factory()

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Await ``fn(*args, **kwargs)`` on the loop and return its result."""
        return asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), self._loop).result()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.provider, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *args, **kwargs: self.call(attr, *args, **kwargs)
        return attr

    def close(self) -> None:
        """Close the provider and stop the loop. Idempotent."""
        if self._cm is None:
            return
        try:
            self.call(self.provider.close)
        finally:
            cm, self._cm = self._cm, None
            cm.__exit__(None, None, None)

    def __enter__(self) -> Blocking:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
