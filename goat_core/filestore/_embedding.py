"""Who embeds a folder store's notes for semantic recall, and where.

- :func:`take_embedding_lock`: one process (or thread) embeds a store at a time: a lock under
  the GOAT home per store and embedder, taken without waiting.
- :class:`BackgroundEmbedding`: for a long-lived host (``ProviderContext.
  embed_in_background``, set by ``goat serve``), the embedding runs on a thread of the
  store's own while its worker keeps answering recalls with the vectors stored so far.

The rules are docs/design.md's (Semantic recall); the store (``_store.py``) decides when.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from goat_core.fileio import StoreLock

if TYPE_CHECKING:
    from goat_core.filestore.search import VectorIndex

#: Seconds :meth:`BackgroundEmbedding.stop` waits for the thread to finish its batch.
STOP_WAIT = 30.0


def take_embedding_lock(path: Path) -> StoreLock | Literal[False] | None:
    """Take the embedding lock at ``path`` if it is free now.

    :returns: the held lock (release it when done); ``False`` when another process or thread
        holds it; ``None`` when no lock can be made there (a read-only GOAT home, whose sync
        then says why, or something else in the lock's place: a warning is logged, since
        another process may then embed the same notes at the same time).
    """
    lock = StoreLock(path)
    try:
        taken = lock.try_acquire()
    except OSError as exc:
        from goat_core.logs import get_logger

        get_logger(__name__).warning(
            "vectors.lock_unavailable",
            lock=str(path),
            error=str(exc),
            effect="another process may embed the same notes at the same time",
        )
        return None
    return lock if taken else False


def reopened(vectors: VectorIndex) -> VectorIndex | None:
    """A new :class:`VectorIndex` on ``vectors``' path when the file there is no longer the
    one ``vectors`` opened (``VectorIndex.is_current``) and holds no other model's vectors:
    deleted, or rebuilt for the same model (by the store's embedding thread after damage,
    say). ``None`` otherwise: current, or another model's file, which stays that process's
    (the old index then refuses to write and says "open it again"). Closes ``vectors`` when
    it returns a new one."""
    import sqlite3

    from goat_core.filestore.search import VectorIndex

    if vectors.is_current():
        return None
    recorded: str | None = None
    if vectors.path.is_file():
        try:
            db = sqlite3.connect(f"{vectors.path.as_uri()}?mode=ro", uri=True)
            try:
                row = db.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
            finally:
                db.close()
            recorded = None if row is None else str(row[0])
        except sqlite3.Error:
            recorded = None
    if recorded not in (None, vectors.embedder.identity):
        return None
    vectors.close()
    return VectorIndex(vectors.path, vectors.embedder, vectors.floor)


class _Stopped(Exception):
    """Raised from the progress callback to end a sync between two batches."""


class BackgroundEmbedding:
    """A store's embedding thread (at most one running). Each batch of notes commits on its
    own (``VectorIndex.sync``), so a stop between batches loses nothing."""

    #: Seconds a failed embedding is reported before the next recall tries again.
    retry_after: ClassVar[float] = 30.0

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._clock = clock
        self._error: BaseException | None = None
        self._failed_at = 0.0
        self._done = 0
        self._total = 0

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def progress(self) -> tuple[int, int]:
        """``(done, total)`` notes of the running (or last) embedding."""
        return self._done, self._total

    def failure(self) -> BaseException | None:
        """Why the last embedding failed, for :attr:`retry_after` seconds after it did
        (``None``: it did not, or it is time to try again)."""
        if self._error is not None and self._clock() - self._failed_at >= self.retry_after:
            self._error = None
        return self._error

    def start(
        self,
        open_index: Callable[[], VectorIndex],
        lock_path: Path,
        listing: Sequence[tuple[str, int, int]],
        load: Callable[[str], tuple[str, str, str] | None],
        sink: Callable[[int, int], None] | None,
        pending: int,
    ) -> None:
        """Embed what ``listing`` needs (``pending`` notes) on a new thread, with a
        :class:`VectorIndex` of its own from ``open_index``, under the embedding lock at
        ``lock_path`` (if another process holds it, the thread ends at once). ``sink`` gets
        the progress, as a sync's would; a failure is logged and kept (:meth:`failure`)."""
        if self.running():
            return
        self._stop.clear()
        self._error = None
        self._done, self._total = 0, pending

        def progress(done: int, total: int) -> None:
            if self._stop.is_set():
                raise _Stopped
            self._done, self._total = done, total
            if sink is not None:
                sink(done, total)

        def run() -> None:
            lock = take_embedding_lock(lock_path)
            if lock is False:
                return  # another process embeds these notes
            index: Any = None
            try:
                index = open_index()
                index.sync(listing, load, progress)
            except _Stopped:
                pass
            except BaseException as exc:  # kept for the next recalls to report
                from goat_core.logs import get_logger

                self._failed_at = self._clock()
                self._error = exc
                get_logger(__name__).warning(
                    "vectors.embedding_failed", error=f"{type(exc).__name__}: {exc}"
                )
            finally:
                if index is not None:
                    index.close()
                if lock is not None:
                    lock.release()

        self._thread = threading.Thread(target=run, name="goat-embed-background", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = STOP_WAIT) -> None:
        """Ask the thread to stop after its current batch, and wait up to ``timeout`` s."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
