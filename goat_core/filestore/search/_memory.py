"""The search index of a store whose GOAT home cannot hold one yet: a full or read-only disk
before the index file was ever made (a new binding, or a Global never used before the disk
filled). Reads must still answer (docs/design.md, Writes and outcomes), so the notes are
indexed into SQLite's memory for this process: every read syncs it from a scan of the notes
and says so in ``degraded``; a write is refused with the fault, before any note changes."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from goat_core.errors import StoreUnwritable
from goat_core.filestore.search._faults import unwritable_reason, write_fault
from goat_core.filestore.search._index import SearchIndex
from goat_core.filestore.search._records import FileStatLike, IndexedDoc, SyncStats


class MemoryIndex(SearchIndex):
    """A :class:`SearchIndex` in memory standing in for the file at ``db_path``, which
    ``fault`` says cannot be made. :attr:`behind` always holds ``fault`` (reads are
    ``degraded``); :meth:`check_writable` raises it (writes exit 6, nothing changed)."""

    in_memory = True

    def __init__(self, db_path: Path, fault: StoreUnwritable) -> None:
        self.fault = fault
        super().__init__(db_path)
        self.behind = fault

    @staticmethod
    def fault_of(exc: BaseException, db_path: Path) -> StoreUnwritable | None:
        """Why the index file at ``db_path`` could not be opened, when that is a full or
        read-only disk (``exc`` says so, or its folder cannot be written now), else ``None``."""
        if isinstance(exc, StoreUnwritable):
            return exc
        if isinstance(exc, OSError):
            return write_fault(exc, db_path, "the search index")
        cause = exc.__cause__
        if isinstance(cause, sqlite3.Error):  # SQLite's words, as the index passed them on
            return write_fault(cause, db_path, "the search index")
        reason = unwritable_reason(db_path.parent)
        if reason is None:
            return None
        what = "the disk is full" if reason == "full" else "it is read-only"
        return StoreUnwritable(
            f"cannot write the search index {db_path}: {what} ({exc}); nothing was stored",
            path=str(db_path),
            reason=reason,
        )

    def _open(self) -> None:
        self._read_only = None
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._ensure_schema()

    def check_writable(self) -> None:
        raise self.fault

    def _rebuild_file(self) -> None:  # never delete files at db_path: they are not this index
        raise self.fault

    def sync(
        self,
        files: Iterable[FileStatLike] | Mapping[str, Sequence[FileStatLike]],
        load: Callable[[str], IndexedDoc | None],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> SyncStats:
        try:
            return super().sync(files, load, progress=progress)
        finally:
            self.behind = self.fault
