"""The index itself: one SQLite file, its tables, transactions, sync and reads
(:class:`SearchIndex`)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sqlite3
import stat
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from goat_core.errors import BadInput, ProviderUnavailable, StoreUnwritable
from goat_core.fileio import is_utf8
from goat_core.filestore.search._faults import (
    _is_busy,
    _is_corrupt,
    behind_reason,
    open_read_only,
    write_fault,
    write_faults,
)
from goat_core.filestore.search._query import (
    MAX_QUERY_TERMS,
    _is_spaceless,
    _prepare,
    _QueryTerm,
    _term_expr,
    _Tokenizer,
    _valid_utf8,
    search_terms,
)
from goat_core.filestore.search._ranking import _marks, _Memo, _rank
from goat_core.filestore.search._records import (
    DocInfo,
    FileStat,
    FileStatLike,
    IndexedDoc,
    IndexStats,
    SearchResults,
    SyncStats,
)
from goat_core.filestore.search._scan import (
    _STAT,
    _by_folder,
    _checked_groups,
    _digest,
    _folder_of,
    _Pending,
    _Plan,
)
from goat_core.filestore.search._schema import (
    SCHEMA_VERSION,
    _meta_text,
    create_schema,
    install_schema,
    schema_is_current,
)
from goat_core.filestore.search._snippets import Snippet, _snippet
from goat_core.logs import get_logger

_BATCH_DOCS = 256
_BATCH_BYTES = 8 * 1024 * 1024

T = TypeVar("T")

log = get_logger(__name__)


class SearchIndex:
    """A full-text index in one SQLite file (created with its folder if missing).

    :param db_path: the index file, e.g. ``GoatHome.index_path(root)``.
    :param busy_timeout_s: how long any operation waits for another process's lock before
        raising :class:`~goat_core.errors.ProviderUnavailable` (seconds).
    :raises ProviderUnavailable: the file cannot be opened or stays locked past the timeout.
    """

    def __init__(self, db_path: Path, *, busy_timeout_s: float = 5.0) -> None:
        if busy_timeout_s <= 0:
            raise BadInput("busy_timeout_s must be positive (seconds to wait for a lock)")
        self.db_path = Path(db_path)
        self.busy_timeout_s = float(busy_timeout_s)
        self.rebuilt = False
        """``True`` once this object rebuilt the index (corrupt or older schema): sync again."""
        self.rebuilds = 0
        """How many times this object emptied the index (found corrupt, an older schema, or
        :meth:`rebuild`): a reader that sees it change during a read answered from an index
        missing notes, and must sync (then read) again."""
        self.behind: StoreUnwritable | None = None
        """Why the index misses changes of the files (full or read-only disk, :meth:`sync`)."""
        self.unsearched: dict[str, str] = {}
        """Files the last :meth:`sync` found but could not index, and why (a name that is not
        UTF-8, a file that could not be read): a read must not call itself complete while
        any is listed (docs/design.md: nothing is silently skipped)."""
        self.strict = False  # True: sync raises StoreUnwritable instead (writes, reindex)
        self._read_only: StoreUnwritable | None = None  # opened read-only: why
        self._conn: sqlite3.Connection | None = None
        self._vocab_conn: sqlite3.Connection | None = None
        self._tokens = _Tokenizer()
        # what searches read that no query changes (term positions, sizes, paths), kept while
        # the index is unchanged: keyed by connections opened, own write transactions begun
        # and SQLite's data_version (changed by any other connection's or process's commit)
        self._memo = _Memo()
        self._opens = 0
        self._writes = 0
        if _not_a_file(self.db_path):  # a folder (or other non-file) where the index goes
            self._rebuild_file()
            return
        try:
            self._guarded(self._open)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self._rebuild_file()

    # ---------------------------------------------------------------- connection handling

    def _open(self) -> None:
        """Open the index for writing, or only for reading on a full or read-only disk."""
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_fault(exc, self.db_path, "the search index") or ProviderUnavailable(
                f"search index {self.db_path}: cannot create its folder ({exc.strerror})"
            ) from exc
        self._read_only = None
        try:
            self._open_writable()
        except sqlite3.OperationalError as exc:
            fault = write_fault(exc, self.db_path, "the search index")
            if fault is None or not self.db_path.is_file():
                raise
            version = str(SCHEMA_VERSION)
            self._opens += 1
            self._conn = open_read_only(self.db_path, self.busy_timeout_s, version, fault)
            self._read_only = fault

    def _writable_again(self) -> None:  # opened read-only: the disk may have room now
        if self._read_only is not None:
            self.close()
            self._guarded(self._open)

    def check_writable(self) -> None:
        """Commit a one-row write (:class:`StoreUnwritable` on a full or read-only disk), so a
        store's write fails before it changes a note."""

        def go() -> None:
            with self._write() as db:
                db.execute(
                    "REPLACE INTO meta VALUES ('checked_writable', ?)", (str(time.time_ns()),)
                )

        self._writable_again()
        self._run(go)

    def _open_writable(self) -> None:
        self._opens += 1
        conn = sqlite3.connect(
            str(self.db_path),
            timeout=self.busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
        self._conn = conn
        try:
            if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                # only takes effect on a new, empty file: free pages can be given back
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            conn.execute("PRAGMA synchronous=NORMAL")
            self._ensure_schema()
        except BaseException:
            self._conn = None
            conn.close()
            raise

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ProviderUnavailable(f"search index {self.db_path} is closed")
        return self._conn

    def _ensure_schema(self) -> None:
        if schema_is_current(self._db):
            return
        with self._write() as db:
            replaced = install_schema(db)
        if replaced:
            self.rebuilt = True
            self.rebuilds += 1

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: takes the lock up front, waits the busy
        timeout for it). A full or read-only disk is :class:`StoreUnwritable`."""
        if self._read_only is not None:
            raise self._read_only
        db = self._db
        with write_faults(db, self.db_path):
            db.execute("BEGIN IMMEDIATE")
            self._writes += 1
            try:
                yield db
            except BaseException:
                if db.in_transaction:
                    db.rollback()
                raise
            db.execute("COMMIT")

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: a consistent snapshot (WAL readers never wait for writers)."""
        db = self._db
        db.execute("BEGIN")
        try:
            yield db
        finally:
            if db.in_transaction:
                db.rollback()

    def _guarded(self, fn: Callable[[], T]) -> T:
        """Run ``fn``; retry while the database is busy, up to the timeout; map errors."""
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                return fn()
            except sqlite3.Error as exc:
                if _is_busy(exc):
                    if time.monotonic() < deadline:
                        time.sleep(0.02)
                        continue
                    raise ProviderUnavailable(
                        f"search index {self.db_path} is busy: another process held its lock"
                        f" longer than the busy timeout ({self.busy_timeout_s:g} s)"
                    ) from exc
                if _is_corrupt(exc):
                    raise
                raise ProviderUnavailable(f"search index {self.db_path}: {exc}") from exc

    def _run(self, fn: Callable[[], T]) -> T:
        """Like :meth:`_guarded`, but a corrupt index is rebuilt and ``fn`` tried once more."""
        try:
            return self._guarded(fn)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self._rebuild_file()
            try:
                return self._guarded(fn)
            except sqlite3.DatabaseError as exc2:
                raise ProviderUnavailable(
                    f"search index {self.db_path} is still corrupt after a rebuild: {exc2}"
                ) from exc2

    def _rebuild_file(self) -> None:
        """Delete the index files and start empty (the index holds nothing the files don't).
        Never on a full or read-only disk: nothing could be indexed again there."""
        if self._read_only is not None:
            raise ProviderUnavailable(f"search index {self.db_path} is damaged: {self._read_only}")
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = f"{self.db_path}{suffix}"
            if _not_a_file(Path(path)):  # moved aside whole: GOAT deletes no folder
                aside = f"{path}.damaged-{os.getpid()}-{time.time_ns()}"
                os.rename(path, aside)
                log.warning("index.moved_aside", path=path, to=aside)
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.rebuilt = True
        self.rebuilds += 1
        self._guarded(self._open)

    # ---------------------------------------------------------------- writing

    def _delete_row(self, db: sqlite3.Connection, row: tuple[Any, ...]) -> None:
        """Remove one ``docs`` row ``(id, title, aliases, meta, extra, body, folder)`` and its
        FTS5 entries (a contentless table needs the indexed values back, rebuilt from the
        stored originals); its folder's digest no longer holds."""
        rid, title, aliases, meta, extra, blob, folder = row
        body = zlib.decompress(blob).decode("utf-8", "surrogatepass")
        db.execute(
            "INSERT INTO fts(fts, rowid, title, aliases, meta, extra, body)"
            " VALUES ('delete', ?, ?, ?, ?, ?, ?)",
            (
                rid,
                _prepare(title),
                _prepare(aliases),
                _prepare(meta),
                _prepare(extra),
                _prepare(body),
            ),
        )
        db.execute("DELETE FROM docs WHERE id = ?", (rid,))
        db.execute("UPDATE folders SET digest = NULL WHERE folder = ?", (folder,))

    def _insert(self, db: sqlite3.Connection, doc: IndexedDoc, stat: FileStatLike) -> None:
        title = _valid_utf8(doc.title)
        aliases = _valid_utf8("\n".join(doc.aliases))
        meta = _valid_utf8(_meta_text(doc))
        extra = _valid_utf8(doc.extra)
        blob = zlib.compress(doc.body.encode("utf-8", "surrogatepass"), 6)
        ident = None if doc.ident is None else _valid_utf8(doc.ident)
        problem = None if doc.problem is None else _valid_utf8(doc.problem)
        folder = _folder_of(stat.path)
        cur = db.execute(
            "INSERT INTO docs(path, mtime_ns, size, title, aliases, meta, extra, body, ident,"
            " problem, folder) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                stat.path,
                stat.mtime_ns,
                stat.size,
                title,
                aliases,
                meta,
                extra,
                blob,
                ident,
                problem,
                folder,
            ),
        )
        # the folder's digest no longer holds (sync compares the folder and sets it again)
        db.execute(
            "INSERT INTO folders(folder, digest, count) VALUES (?, NULL, 0)"
            " ON CONFLICT(folder) DO UPDATE SET digest = NULL",
            (folder,),
        )
        db.execute(
            "INSERT INTO fts(rowid, title, aliases, meta, extra, body) VALUES (?, ?, ?, ?, ?, ?)",
            (
                cur.lastrowid,
                _prepare(title),
                _prepare(aliases),
                _prepare(meta),
                _prepare(extra),
                _prepare(doc.body),
            ),
        )

    _ROW = "SELECT id, title, aliases, meta, extra, body, folder FROM docs WHERE path = ?"

    def _apply(self, batch: list[_Pending], removals: list[str]) -> tuple[int, int, int, int]:
        """Apply one batch in one transaction; returns (added, updated, removed, unchanged).
        Rows are re-read under the lock, so another process's concurrent sync is respected."""
        added = updated = removed = unchanged = 0
        with self._write() as db:
            for path in removals:
                row = db.execute(self._ROW, (path,)).fetchone()
                if row is not None:
                    self._delete_row(db, row)
                    removed += 1
            for item in batch:
                if item.doc is None:
                    continue
                st = item.stat
                cur = db.execute(
                    "SELECT mtime_ns, size FROM docs WHERE path = ?", (st.path,)
                ).fetchone()
                if cur is not None and (cur[0], cur[1]) == (st.mtime_ns, st.size):
                    unchanged += 1  # another process indexed this version meanwhile
                    continue
                if cur is not None:
                    row = db.execute(self._ROW, (st.path,)).fetchone()
                    self._delete_row(db, row)
                    updated += 1
                else:
                    added += 1
                self._insert(db, item.doc, st)
        return added, updated, removed, unchanged

    def sync(
        self,
        files: Iterable[FileStatLike] | Mapping[str, Sequence[FileStatLike]],
        load: Callable[[str], IndexedDoc | None],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> SyncStats:
        """Bring the index in line with ``files`` (every file of the store, once; any
        :class:`FileStatLike`, e.g. a walk's entries as they are).

        ``files`` may also come grouped by folder, as
        :attr:`goat_core.filestore.WalkResult.folders` has them: a mapping from a folder (the
        part of the path before the last ``/``, ``""`` at the root) to its files, each path
        under exactly the key it belongs to (checked; :class:`ValueError` otherwise). That
        saves grouping every path again.

        A file whose ``(mtime_ns, size)`` equals the stored one is not loaded. Changed and new
        files are passed to ``load(path)``; ``None`` means unreadable: counted in ``skipped``,
        any older row kept. Rows of paths not in ``files`` are removed. Work is committed in
        batches (one transaction each, at most 256 files); the lock is only held while a
        batch is written, not while files are read.

        Change scan, proportional to what changed: the files are grouped by folder (the part
        of the path before the last ``/``) and each folder's listing is hashed in one pass
        (see :func:`_digest`). The index keeps, per folder, the digest of the last listing
        found equal to the folder's rows (checked under the lock; any later change to those
        rows clears it). A folder whose digest is unchanged is unchanged without reading its
        rows; only the rows of folders whose digest differs, is new or is gone are read and
        compared file by file. A folder holding a file that was skipped keeps no digest, so it
        is compared (and the file retried) at every sync.

        A full or read-only disk (:class:`StoreUnwritable`) keeps what was committed, sets
        :attr:`behind` and returns, or raises when :attr:`strict`; a full sync clears it.

        :param progress: called as ``progress(done, total)`` with counts of changed files.
        :raises ProviderUnavailable: the index stayed locked past the busy timeout.
        :raises StoreUnwritable: with :attr:`strict`, the disk is full or read-only.
        """
        self._writable_again()
        try:
            stats = self._sync_files(files, load, progress)
        except StoreUnwritable as fault:
            self.behind = fault
            if self.strict:
                raise
            return SyncStats(0, 0, 0, 0, 0, 0.0)
        self.behind = None
        return stats

    def _sync_files(
        self,
        files: Iterable[FileStatLike] | Mapping[str, Sequence[FileStatLike]],
        load: Callable[[str], IndexedDoc | None],
        progress: Callable[[int, int], None] | None,
    ) -> SyncStats:
        started = time.monotonic()
        groups: dict[str, Sequence[FileStatLike]] = (
            _checked_groups(files) if isinstance(files, Mapping) else dict(_by_folder(files))
        )
        digests = {folder: _digest(entries) for folder, entries in groups.items()}
        plan = self._run(functools.partial(self._plan, digests))
        stored = plan.rows
        scanned = sum(map(len, groups.values()))
        unchanged = scanned - sum(len(groups[f]) for f in plan.changed)
        skipped = 0
        unsearched: dict[str, str] = {}
        unsealed: set[str] = set()  # folders left without a digest (a file was skipped)
        changed: list[FileStatLike] = []
        pop = stored.pop
        for folder in plan.changed:
            for st in groups[folder]:
                # a path listed twice is popped once; its second entry is re-checked under
                # the lock
                if pop(st.path, None) == (st.mtime_ns, st.size):
                    unchanged += 1
                elif not is_utf8(st.path):
                    skipped += 1
                    unsearched[st.path] = "its name is not UTF-8, so it is not indexed"
                    unsealed.add(folder)
                else:
                    changed.append(st)
        gone = list(stored)  # stored paths no longer among the files
        del stored
        total = len(changed) + len(gone)
        done = 0
        added = updated = removed = 0
        if progress is not None:
            progress(0, total)
        if gone:
            for i in range(0, len(gone), _BATCH_DOCS * 4):
                part = gone[i : i + _BATCH_DOCS * 4]
                r = self._run(functools.partial(self._apply, [], part))[2]
                removed += r
                done += len(part)
                if progress is not None:
                    progress(done, total)
        batch: list[_Pending] = []
        batch_bytes = 0

        def flush() -> None:
            nonlocal added, updated, unchanged, done, batch, batch_bytes
            if not batch:
                return
            todo = batch
            a, u, _r, n = self._run(lambda: self._apply(todo, []))
            added += a
            updated += u
            unchanged += n
            done += len(todo)
            batch, batch_bytes = [], 0
            if progress is not None:
                progress(done, total)

        for st in changed:
            doc = load(st.path)
            if doc is None:
                skipped += 1
                unsearched[st.path] = "it could not be read"
                unsealed.add(_folder_of(st.path))
                done += 1
                continue
            batch.append(_Pending(st, doc))
            batch_bytes += len(doc.body)
            if len(batch) >= _BATCH_DOCS or batch_bytes >= _BATCH_BYTES:
                flush()
        flush()
        self.unsearched = unsearched
        with contextlib.suppress(StoreUnwritable):  # digests only save work: rows are current
            self._seal([f for f in plan.changed if f not in unsealed], groups, digests, plan.gone)
            if added or updated or removed:
                self._run(self._release_free_pages)
        return SyncStats(
            scanned=scanned,
            added=added,
            updated=updated,
            removed=removed,
            unchanged=unchanged,
            seconds=time.monotonic() - started,
            skipped=skipped,
        )

    def _release_free_pages(self) -> None:
        """Give free pages back to the file system when they are over a tenth of the file
        (FTS5 segment merges leave them behind after large syncs)."""
        db = self._db
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        if pages and free * 10 > pages:
            # executescript steps the pragma to completion (execute() frees only one page)
            db.executescript("PRAGMA incremental_vacuum;")

    _FOLDER_ROWS = "SELECT path, mtime_ns, size FROM docs INDEXED BY docs_folder WHERE folder = ?"

    def _plan(self, digests: dict[str, bytes]) -> _Plan:
        """In one snapshot: the listed folders whose digest differs from the stored one (or
        is new or cleared), the stored folders no longer listed, and the stored
        ``path -> (mtime_ns, size)`` of both. The row count checks that every other row sits
        in a folder found unchanged; if not, every row is compared."""
        with self._read() as db:
            stored = {
                f: (d, c) for f, d, c in db.execute("SELECT folder, digest, count FROM folders")
            }
            changed: list[str] = []
            kept = 0  # rows of the folders found unchanged
            for folder, digest in digests.items():
                have = stored.get(folder)
                if have is not None and have[0] == digest:
                    kept += have[1]
                else:
                    changed.append(folder)
            gone = [f for f in stored if f not in digests]
            want = [f for f in (*changed, *gone) if is_utf8(f)]
            rows: dict[str, tuple[int, int]] = {}
            if len(want) > max(64, len(stored) // 4):  # one scan beats many lookups
                wanted = set(want)
                rows = {
                    p: (m, s)
                    for f, p, m, s in db.execute(
                        "SELECT folder, path, mtime_ns, size FROM docs INDEXED BY docs_folder"
                    )
                    if f in wanted
                }
            else:
                for folder in want:
                    rows.update({p: (m, s) for p, m, s in db.execute(self._FOLDER_ROWS, (folder,))})
            total = db.execute("SELECT count(*) FROM docs").fetchone()[0]
            if total != kept + len(rows):
                rows = {
                    p: (m, s)
                    for p, m, s in db.execute(
                        "SELECT path, mtime_ns, size FROM docs INDEXED BY docs_stat"
                    )
                }
                changed = list(digests)
                gone = sorted({*stored, *map(_folder_of, rows)} - digests.keys())
        return _Plan(changed=changed, rows=rows, gone=gone)

    def _seal(
        self,
        folders: list[str],
        groups: dict[str, Sequence[FileStatLike]],
        digests: dict[str, bytes],
        gone: list[str],
    ) -> None:
        """Store the digests of ``folders`` whose rows, re-read under the lock, equal their
        listing (another process may have changed them since), and drop the entries of
        ``gone`` folders left without rows. In transactions of about a thousand rows."""
        part: list[str] = []
        size = 0
        for folder in folders:
            part.append(folder)
            size += len(groups[folder])
            if size >= _BATCH_DOCS * 4:
                self._run(functools.partial(self._seal_part, part, groups, digests, []))
                part, size = [], 0
        if part or gone:
            self._run(functools.partial(self._seal_part, part, groups, digests, gone))

    def _seal_part(
        self,
        folders: list[str],
        groups: dict[str, Sequence[FileStatLike]],
        digests: dict[str, bytes],
        gone: list[str],
    ) -> None:
        with self._write() as db:
            for folder in folders:
                listing = {st.path: (st.mtime_ns, st.size) for st in groups[folder]}
                if len(listing) != len({_STAT(st) for st in groups[folder]}):
                    continue  # one path listed with two different stats: no digest holds
                rows = {p: (m, s) for p, m, s in db.execute(self._FOLDER_ROWS, (folder,))}
                if rows != listing:
                    db.execute("UPDATE folders SET digest = NULL WHERE folder = ?", (folder,))
                else:
                    db.execute(
                        "INSERT INTO folders(folder, digest, count) VALUES (?, ?, ?)"
                        " ON CONFLICT(folder) DO UPDATE SET digest = excluded.digest,"
                        " count = excluded.count",
                        (folder, digests[folder], len(rows)),
                    )
            for folder in gone:
                if db.execute(self._FOLDER_ROWS + " LIMIT 1", (folder,)).fetchone() is None:
                    db.execute("DELETE FROM folders WHERE folder = ?", (folder,))

    def update_one(self, doc: IndexedDoc, stat: FileStat) -> None:
        """Index one file the provider just wrote (replacing its row). ``doc.path`` must equal
        ``stat.path``. Clears the digest of the file's folder: the next :meth:`sync` compares
        that folder file by file (and finds this row current if ``stat`` is the file's).
        On a full or read-only disk the row stays as it was and :attr:`behind` says why.

        :raises BadInput: the two paths differ.
        """
        if doc.path != stat.path:
            raise BadInput(
                f"update_one: doc.path {doc.path!r} differs from stat.path {stat.path!r}"
            )
        if not is_utf8(stat.path):
            self.unsearched[stat.path] = "its name is not UTF-8, so it is not indexed"
            return
        self.unsearched.pop(stat.path, None)

        def go() -> None:
            with self._write() as db:
                row = db.execute(self._ROW, (stat.path,)).fetchone()
                if row is not None:
                    self._delete_row(db, row)
                self._insert(db, doc, stat)

        try:
            self._run(go)
        except StoreUnwritable as fault:
            self.behind = fault

    def remove(self, path: str) -> bool:
        """Drop the row of ``path`` (store-relative). Returns whether there was one. Clears the
        digest of its folder; on a full or read-only disk keeps the row, sets :attr:`behind`
        and returns ``False``, like :meth:`update_one`."""
        self.unsearched.pop(path, None)
        if not is_utf8(path):  # never indexed (see update_one): no row to drop
            return False

        def go() -> bool:
            with self._write() as db:
                row = db.execute(self._ROW, (path,)).fetchone()
                if row is None:
                    return False
                self._delete_row(db, row)
                return True

        try:
            return self._run(go)
        except StoreUnwritable as fault:
            self.behind = fault
            return False

    def rebuild(self) -> None:
        """Empty the index (the next :meth:`sync` indexes every file again)."""

        def go() -> None:
            with self._write() as db:
                create_schema(db)

        self._run(go)
        self.rebuilt = True
        self.rebuilds += 1

    # ---------------------------------------------------------------- reading

    def search(self, query: str, *, limit: int = 10, snippets: bool = True) -> SearchResults:
        """Ranked notes for user text ``query`` (semantics: :mod:`goat_core.filestore.search`).

        :param limit: most hits returned, at least 1.
        :param snippets: ``False``: hits carry an empty snippet (a caller that reranks cuts
            its own with :meth:`snippet` for what it shows).
        :raises BadInput: ``limit`` below 1.
        :raises ProviderUnavailable: the index could not be read within the busy timeout.
        """
        if limit < 1:
            raise BadInput(f"search limit must be at least 1, got {limit}")
        every = search_terms(query, cap=None)
        if not every:
            return SearchResults(hits=[], total=0, complete=True)
        terms = every[:MAX_QUERY_TERMS]
        try:
            results = self._guarded(lambda: self._search(terms, limit, snippets))
            if self.behind is not None:
                results = dataclasses.replace(
                    results, complete=False, degraded=(*results.degraded, behind_reason(self))
                )
            if len(every) > len(terms):
                # Never a silent cut: the caller learns the query was shortened.
                return dataclasses.replace(
                    results,
                    complete=False,
                    degraded=(
                        *results.degraded,
                        f"the query has {len(every)} distinct search terms; only the first "
                        f"{MAX_QUERY_TERMS} were searched",
                    ),
                )
            return results
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self._rebuild_file()
            return SearchResults(
                hits=[],
                total=0,
                complete=False,
                degraded=(f"search index {self.db_path} was corrupt and has been rebuilt",),
            )

    def snippet(self, text: str, query: str) -> Snippet | None:
        """The window of ``text`` around the best match of ``query``'s terms, plain, with the
        spans of the matched words as in a search hit; ``None`` when no term occurs in it."""
        terms = search_terms(query, cap=None)[:MAX_QUERY_TERMS]
        if not terms:
            return None
        qterms = self._guarded(lambda: self._query_terms(terms))
        return _snippet(text, _marks(qterms))

    def _search(self, terms: list[str], limit: int, snippets: bool = True) -> SearchResults:
        db = self._db
        if self._vocab_conn is not db:
            # per connection, in its temp schema: term statistics of the index
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms USING fts5vocab(main, fts, row)"
            )
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_where"
                " USING fts5vocab(main, fts, instance)"
            )
            self._vocab_conn = db
        qterms = self._query_terms(terms)
        with self._read() as db:
            # the first read fixes this transaction's snapshot and reports its version
            version = db.execute("PRAGMA data_version").fetchone()[0]
            self._memo.valid_for((self._opens, self._writes, version))
            return _rank(db, terms, qterms, limit, snippets=snippets, memo=self._memo)

    def _query_terms(self, terms: list[str]) -> list[_QueryTerm]:
        """Each search term with the tokens the index holds for it (case-folded, diacritics
        removed, Porter-stemmed; a spaceless run as its character pairs)."""
        texts: list[str] = []
        for t in terms:
            if _is_spaceless(t) and len(t) > 1:
                texts.append(" ".join(t[i : i + 2] for i in range(len(t) - 1)))
            else:
                texts.append(t)
        tokens = self._tokens.tokens(texts)
        return [
            _QueryTerm(
                text=t,
                expr=_term_expr(t),
                tokens=toks,
                prefix=_is_spaceless(t) and len(t) == 1,
                spaceless=_is_spaceless(t),
            )
            for t, toks in zip(terms, tokens, strict=True)
        ]

    def documents(self) -> list[DocInfo]:
        """Every indexed file without its body, ordered by path case-insensitively (ties by
        exact path), read from a covering index (cost: the listing, never the bodies).

        :raises ProviderUnavailable: the index could not be read within the busy timeout.
        """

        def go() -> list[DocInfo]:
            with self._read() as db:
                rows = db.execute(
                    "SELECT path, title, ident, problem, mtime_ns, size FROM docs"
                    " INDEXED BY docs_stat"
                ).fetchall()
            docs = [DocInfo(*row) for row in rows]
            docs.sort(key=lambda d: (d.path.casefold(), d.path))
            return docs

        return self._run(go)

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        """``path -> title`` of those of ``paths`` that are indexed, read from the covering
        index (cost: the paths asked for, never the listing).

        :raises ProviderUnavailable: the index could not be read within the busy timeout.
        """
        wanted = list(dict.fromkeys(paths))

        def go() -> dict[str, str]:
            out: dict[str, str] = {}
            with self._read() as db:
                for lo in range(0, len(wanted), 500):
                    part = wanted[lo : lo + 500]
                    marks = ",".join("?" * len(part))
                    out.update(
                        db.execute(
                            f"SELECT path, title FROM docs INDEXED BY docs_stat"
                            f" WHERE path IN ({marks})",
                            part,
                        ).fetchall()
                    )
            return out

        return self._run(go) if wanted else {}

    def change_token(self) -> tuple[int, int, int]:
        """A value that differs whenever the index may have changed since it was last taken:
        this object's own write transactions, another connection's or process's commits
        (SQLite's ``data_version``), the file reopened (rebuilt). Equal tokens: the same
        rows (a cache of what the index holds may be kept while it stays equal).

        :raises ProviderUnavailable: the index could not be read within the busy timeout.
        """

        def go() -> tuple[int, int, int]:
            version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
            return (self._opens, self._writes, version)

        return self._run(go)

    def problems(self) -> list[tuple[str, str]]:
        """``(path, problem)`` of every indexed file stored with a problem (see
        :attr:`IndexedDoc.problem`), ordered like :meth:`documents`.

        :raises ProviderUnavailable: the index could not be read within the busy timeout.
        """

        def go() -> list[tuple[str, str]]:
            with self._read() as db:
                rows = db.execute(
                    "SELECT path, problem FROM docs INDEXED BY docs_stat WHERE problem IS NOT NULL"
                ).fetchall()
            return sorted(((p, q) for p, q in rows), key=lambda r: (r[0].casefold(), r[0]))

        return self._run(go)

    def aliases(self) -> dict[str, list[str]]:
        """``path -> frontmatter aliases`` of every indexed note that has any."""
        sql = "SELECT path, aliases FROM docs WHERE aliases != ''"
        rows = self._run(lambda: self._db.execute(sql).fetchall())
        return {path: names.split("\n") for path, names in rows}

    def stats(self) -> IndexStats:
        """Documents indexed and bytes on disk."""

        def go() -> int:
            with self._read() as db:
                return int(db.execute("SELECT count(*) FROM docs").fetchone()[0])

        docs = self._run(go)
        size = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                size += os.stat(f"{self.db_path}{suffix}").st_size
        return IndexStats(
            path=str(self.db_path), documents=docs, bytes=size, schema_version=SCHEMA_VERSION
        )

    def verify(self) -> list[str]:
        """Check the index; returns the problems found (empty: healthy). Runs SQLite's
        ``quick_check``, FTS5's ``integrity-check`` and compares row counts, all in one write
        transaction so a concurrent writer can never make a healthy index look inconsistent.
        Does not repair: call :meth:`rebuild` (then :meth:`sync`) for that.

        :raises ProviderUnavailable: the index stayed locked past the busy timeout.
        """

        def go() -> list[str]:
            problems: list[str] = []
            with self._write() as db:
                for (line,) in db.execute("PRAGMA quick_check"):
                    if line != "ok":
                        problems.append(f"quick_check: {line}")
                db.execute("INSERT INTO fts(fts) VALUES ('integrity-check')")
                docs = db.execute("SELECT count(*) FROM docs").fetchone()[0]
                sized = db.execute("SELECT count(*) FROM fts_docsize").fetchone()[0]
                if docs != sized:
                    problems.append(f"{docs} documents but {sized} full-text entries")
            return problems

        try:
            return self._guarded(go)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            return [f"search index {self.db_path} is corrupt: {exc}"]

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._tokens.close()
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SearchIndex({str(self.db_path)!r})"


def _not_a_file(path: Path) -> bool:
    """``path`` exists and is not a regular file (a folder, a FIFO, a socket)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
