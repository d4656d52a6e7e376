"""``StoreWorker`` (goat_core/filestore/_worker.py): one thread per store running its calls in
order; what a cancelled caller waits for."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio

from goat_core.filestore import StoreWorker


def test_calls_run_on_the_worker_in_order_and_errors_come_back() -> None:
    """Each call runs on the worker's own thread, in the order awaited, and an exception
    raised there reaches the caller."""
    worker = StoreWorker("order")
    seen: list[tuple[int, int]] = []

    async def main() -> None:
        for i in range(5):
            await worker.run(lambda i=i: seen.append((i, threading.get_ident())))
        try:
            await worker.run(int, "not a number")
        except ValueError as exc:
            assert "not a number" in str(exc)
        else:
            raise AssertionError("the worker's ValueError was lost")

    try:
        asyncio.run(main())
    finally:
        worker.close()
    assert [i for i, _ in seen] == [0, 1, 2, 3, 4]
    assert {t for _, t in seen} == {worker._thread.ident} != {threading.get_ident()}


def test_a_caller_cancelled_by_a_scope_waits_for_the_work_to_end() -> None:
    """A caller whose anyio cancel scope times out while its work runs returns only once the
    work has ended (a store call is never left half-way behind its caller's back)."""
    worker = StoreWorker("cancel")
    started = threading.Event()
    ended: list[float] = []

    def work() -> None:
        started.set()
        time.sleep(0.3)
        ended.append(time.monotonic())

    async def main() -> tuple[bool, float]:
        with anyio.move_on_after(0.05) as scope:
            await worker.run(work)
        return scope.cancel_called, time.monotonic()

    try:
        cancelled, returned = asyncio.run(main())
    finally:
        worker.close()
    assert started.is_set() and cancelled
    assert ended and returned >= ended[0]


def test_a_natively_cancelled_caller_leaves_queued_work_to_run() -> None:
    """``task.cancel()`` of a caller whose work is still queued behind another call returns at
    once, and the queued work runs all the same (never dropped half-decided)."""
    worker = StoreWorker("native")
    gate = threading.Event()
    done = threading.Event()

    async def main() -> None:
        worker.submit(gate.wait, 5)
        task = asyncio.ensure_future(worker.run(done.set))
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        else:
            raise AssertionError("the task was not cancelled")
        assert not done.is_set()
        gate.set()

    try:
        asyncio.run(main())
        assert done.wait(5)
    finally:
        worker.close()
