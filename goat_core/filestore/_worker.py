"""One worker thread per store, for providers that do blocking file and SQLite work."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio.to_thread

T = TypeVar("T")

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
        """Run ``fn(*args, **kwargs)`` on the worker thread and return its result.

        A caller cancelled meanwhile (an anyio cancel scope) still waits for the work to end,
        and queued work is never dropped by a cancellation. On asyncio the result comes back
        through the loop itself (``asyncio.wrap_future``, shielded so that a native
        cancellation leaves the work queued or running); elsewhere (trio) a pool thread waits
        for it (``anyio.to_thread.run_sync``), a thread hop more per call."""
        if threading.current_thread() is self._thread:
            return fn(*args, **kwargs)
        fut = self.submit(fn, *args, **kwargs)
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # not on asyncio
            return await anyio.to_thread.run_sync(fut.result)
        with anyio.CancelScope(shield=True):
            result = await asyncio.shield(asyncio.wrap_future(fut))
        return result

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop after queued work finishes. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
