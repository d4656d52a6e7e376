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


#: What :meth:`StoreWorker.run_idle` returns when the worker was not idle.
BUSY: Any = object()


class StoreWorker:
    """One worker thread per store; every call for the store runs on it, in order.

    A store's state (its SQLite connections, caches) is touched by one thread at a time: the
    worker, or a blocking caller running one call itself while the worker is idle
    (:meth:`run_idle`). ``await worker.run(fn, *args)`` runs ``fn`` on the worker without
    blocking the loop.
    """

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=f"goat-store-{name}", daemon=True)
        self._closed = False
        #: held while a call runs, on the worker or inline (:meth:`run_idle`)
        self._busy = threading.Lock()
        #: calls submitted and not yet finished (or skipped, cancelled before they ran)
        self._unfinished = 0
        self._count = threading.Lock()
        self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fut, fn, args, kwargs = item
            run = fut.set_running_or_notify_cancel()  # False: cancelled before it ran
            result: Any = None
            error: BaseException | None = None
            if run:
                with self._busy:
                    try:
                        result = fn(*args, **kwargs)
                    except BaseException as exc:  # delivered to the awaiting caller
                        error = exc
            # idle again before the caller learns the outcome: its next call may run inline
            with self._count:
                self._unfinished -= 1
            if error is not None:
                fut.set_exception(error)
            elif run:
                fut.set_result(result)
            del fut, fn, args, kwargs, result, error, item

    def run_idle(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the calling thread if the worker is idle (nothing submitted
        is unfinished), keeping the worker from starting anything meanwhile; else return
        :data:`BUSY` at once without running it (the caller then submits it, behind the
        rest). A blocking caller saves the hops to the worker thread and back; calls stay
        in order (one submitted while ``fn`` runs starts after it) and one at a time."""
        if threading.current_thread() is self._thread:
            return fn(*args)
        if self._closed or not self._busy.acquire(blocking=False):
            return BUSY  # type: ignore[no-any-return]
        try:
            with self._count:
                idle = self._unfinished == 0
            return fn(*args) if idle else BUSY
        finally:
            self._busy.release()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        if self._closed:
            raise RuntimeError("store worker is closed")
        fut: Future[T] = Future()
        with self._count:
            self._unfinished += 1
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
