"""A blocking recall (``SyncProvider.recall``) is answered on the caller's thread while the
store's worker is idle (``FolderStoreProvider._recall_now``, ``StoreWorker.run_idle``), and
stays in order with every other call of the store."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from conftest import MakeStore
from goat_core.contract import MemoryWrite

from goat_markdown.provider import MarkdownProvider


def _traced(prov: Any, name: str, log: list[tuple[str, int]], gate: threading.Event | None = None):  # type: ignore[no-untyped-def]
    real = getattr(prov, name)

    def traced(*args: Any, **kwargs: Any) -> Any:
        log.append((f"{name} start", threading.get_ident()))
        if gate is not None:
            assert gate.wait(10)
        try:
            return real(*args, **kwargs)
        finally:
            log.append((f"{name} end", threading.get_ident()))

    setattr(prov, name, traced)


def test_an_idle_store_recalls_on_the_callers_thread_as_the_worker_would(
    store: MakeStore, vault: Path
) -> None:
    sp = store(root=vault)
    sp.remember(MemoryWrite(text="quokkas sleep by day in the harbour", title="Quokka"))
    log: list[tuple[str, int]] = []
    _traced(sp.provider, "_recall", log)
    inline = sp.recall("quokkas harbour", limit=5)
    assert log == [("_recall start", threading.get_ident()), ("_recall end", threading.get_ident())]
    awaited = sp.call(sp.provider.recall, "quokkas harbour", limit=5)
    assert log[2][1] == sp.provider._worker._thread.ident != threading.get_ident()
    assert inline == awaited and [i.title for i in inline.items] == ["Quokka"]


def test_a_busy_store_queues_the_recall_behind_the_call_before_it(
    store: MakeStore, vault: Path
) -> None:
    sp = store(root=vault)
    sp.remember(MemoryWrite(text="quokkas sleep by day", title="Quokka"))
    log: list[tuple[str, int]] = []
    _traced(sp.provider, "_recall", log)
    gate = threading.Event()
    earlier = sp.provider._worker.submit(lambda: (gate.wait(10), log.append(("earlier", 0))))
    got: list[Any] = []
    caller = threading.Thread(target=lambda: got.append(sp.recall("quokkas", limit=5)))
    caller.start()
    time.sleep(0.2)
    assert not got and log == []  # waiting behind the earlier call, not run beside it
    gate.set()
    caller.join(10)
    earlier.result(10)
    assert [entry for entry, _ in log] == ["earlier", "_recall start", "_recall end"]
    assert log[1][1] == sp.provider._worker._thread.ident  # queued, so run by the worker
    assert [i.title for i in got[0].items] == ["Quokka"]


def test_a_write_made_during_an_inline_recall_waits_for_it(store: MakeStore, vault: Path) -> None:
    sp = store(root=vault)
    sp.remember(MemoryWrite(text="quokkas sleep by day", title="Quokka"))
    log: list[tuple[str, int]] = []
    gate = threading.Event()
    _traced(sp.provider, "_recall", log, gate)
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(sp.recall("quokkas", limit=5)))
    reader.start()
    while not log:
        time.sleep(0.01)
    assert log[0] == ("_recall start", reader.ident)  # inline, on the reader's thread
    wrote: list[Any] = []
    writer = threading.Thread(
        target=lambda: wrote.append(sp.remember(MemoryWrite(text="more quokkas", title="More")))
    )
    writer.start()
    time.sleep(0.2)
    assert not wrote  # the worker waits while the inline recall runs
    gate.set()
    reader.join(10)
    writer.join(10)
    assert [i.title for i in got[0].items] == ["Quokka"]
    assert wrote[0].status.value == "stored"
    assert [i.title for i in sp.recall("quokkas", limit=5).items] == ["Quokka", "More"]


def test_a_store_whose_recall_is_overridden_is_never_recalled_inline(
    store: MakeStore, vault: Path
) -> None:
    class Overridden(MarkdownProvider):
        async def recall(self, query: str, *, limit: int = 10) -> Any:
            return await super().recall(query, limit=limit)

    sp = store(root=vault)
    assert sp.provider._recall_now("quokkas", 5) is not None
    sp.provider.__class__ = Overridden
    assert sp.provider._recall_now("quokkas", 5) is None


def test_a_store_with_an_embedder_recalls_on_its_worker(store: MakeStore, vault: Path) -> None:
    # the vector index's SQLite connection and the model belong to the worker thread
    sp = store(root=vault)
    sp.provider._embedder = "any-embedder"
    assert sp.provider._recall_now("quokkas", 5) is None
