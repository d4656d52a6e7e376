"""The vector index of a folder store: heading-section chunks of every note, embedded by the
binding's embedder, kept under the GOAT home (never in the store): one SQLite file says which
row holds what, and one flat file beside it holds the rows
(``goat_core/filestore/search/_rowfile.py``).

- Incremental: :meth:`VectorIndex.sync` takes the keyword index's listing (path, mtime,
  size) and embeds only new or changed notes; rows of vanished notes are dropped.
- Crash-safe: a batch's rows are appended to the row file first, then its notes' chunks
  (with their slots) and stat rows are committed in one SQLite transaction (WAL); after
  ``kill -9`` a note is either fully indexed at its old stat or at its new one, and rows
  written without their commit are dead slots nothing refers to. The next sync re-embeds
  whatever is not current.
- Compact: replaced and deleted rows stay in the row file, dead, until they outnumber a
  quarter of the live ones (:data:`COMPACT_DEAD`); the live rows are then copied into a new
  file whose name is committed with their new slots in one transaction.
- Rebuilt when the embedder's ``identity`` (model id, revision, weights sha256) changes,
  when the schema changes, and when SQLite reports its file damaged, on open or later, in a
  sync or a search (both files are deleted and rebuilt; :attr:`VectorIndex.rebuilt` says
  why; past the open, :class:`~goat_core.errors.IndexDamaged` is raised). A row file that is
  missing or shorter than the rows it should hold loses the notes whose rows are gone, so the
  next sync re-embeds them (said in ``rebuilt`` on open); a search that finds a row past the
  file's end or a row whose checksum does not match drops that row's notes and raises
  :class:`~goat_core.errors.IndexDamaged`.
- Safe beside other processes: a search reads the generation, its row file and every slot in
  one SQLite snapshot and keeps that file open, so a commit or a compaction by another process
  neither mixes two states nor looks like damage (damage found while the generation moved on
  re-reads the map, dropping nothing). A row file deleted or replaced while open is reopened
  before rows are appended; a symbolic link in its place is removed, never followed. A process
  whose SQLite file another process deleted and rebuilt (a new embedder) touches none of the
  new index's row files.
- Typed failures: vectors from the embedder are checked where they enter (one finite vector of
  its dimensions per text; a finite, non-zero query vector), else
  :class:`~goat_core.errors.ProviderUnavailable` naming the embedder, nothing of the batch
  stored; a full or read-only disk is :class:`~goat_core.errors.StoreUnwritable`. On a
  read-only GOAT home the SQLite file is opened read-only and searched as it is.
- Plain SQLite only (no extension): vectors are int8 rows with one float scale each
  (about a quarter of float32's size); search is a brute-force dot product in NumPy over
  blocks of rows read from the file into one reused buffer, so memory stays flat with the
  number of rows; per row, only its scale, checksum and note number (numbers, not Python
  objects) stay in memory.
- Besides its heading-section chunks, every note has one row for its title and description
  (:func:`~goat_core.filestore.search._chunks.note_text`, ``kind`` 1). A note scores the
  cosine of its best chunk plus :data:`NOTE_WEIGHT` times the cosine of that row: what the
  whole note is about counts beside its best section, and a long note still gains nothing
  from its number of sections.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from goat_core.contract import Embedder
from goat_core.errors import GoatError, IndexDamaged, ProviderUnavailable, StoreUnwritable
from goat_core.filestore.search._chunks import chunk_note, note_text
from goat_core.filestore.search._faults import write_fault
from goat_core.filestore.search._rowfile import RowFile, ShortRead, checksums

VECTOR_SCHEMA = 3
#: Weight of a note's title-and-description row beside its best chunk: of 0 to 0.5, the best
#: sum over both embedders of ``plugins/embed`` of the hybrid MRR@10 on the tuning
#: half of ``benchmarks/questions/en_questions.tsv`` with the descriptions kept at 0.97
#: (``benchmarks/eval_recall.py --note-weights``); reported on the other half. Aliases, section
#: headings or link anchor text in that row did not gain on the tuning half
#: (``benchmarks/eval_variants.py``).
NOTE_WEIGHT = 0.2
#: Chunks embedded per call to the model.
EMBED_BATCH = 32
#: The row file is compacted after a sync when its dead rows exceed this share of the live
#: ones (it then holds at most 1.25 times the live rows).
COMPACT_DEAD = 0.25

_CORRUPT = ("malformed", "not a database", "file is encrypted", "disk image")
#: What SQLite says when a damaged page hid a table or a column from it: damage, not a bug.
_LOST_SCHEMA = ("no such column", "no such table")


@dataclass(frozen=True)
class ChunkHit:
    """The best chunk of one note for a query: the note's score (cosine of that chunk plus
    :data:`NOTE_WEIGHT` times the cosine of the note's title and description) and the
    chunk's body offsets."""

    path: str
    score: float
    start: int
    end: int
    heading: str


@dataclass
class _RowMap:
    """What each slot of the row file holds, as arrays (no Python object per row).

    Notes are numbered in slot order; a note's rows are consecutive slots (a batch appends
    them together, a compaction keeps their order), so note ``k``'s rows lie in
    ``starts[k]:ends[k]`` among dead rows at most."""

    slots: int  # rows of the file the index refers to (highest live slot + 1)
    scale: Any  # float32 per slot (0: dead)
    check: Any  # float32 per slot: the recorded checksum
    live: Any  # bool per slot
    chunk: Any  # bool per slot: a chunk row (not a note row, not dead)
    starts: Any  # intp per note: its first slot
    ends: Any  # intp per note: one past its last slot
    note_row: Any  # intp per note: the slot of its title-and-description row (-1: none)
    paths: list[str]
    version: int  # PRAGMA data_version when loaded
    generation: str  # the row file's generation the slots refer to
    rows: RowFile  # that generation's file, opened while the slots were read


class _Stale(Exception):
    """Another process compacted the row file after the search read its slots' map: read
    the map again (nothing is damaged)."""


def _is_corrupt(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.DatabaseError) and any(m in str(exc) for m in _CORRUPT)


def _is_damage(exc: BaseException) -> bool:
    """A damaged file, found past the check on open: a corruption verdict, or a table or
    column gone missing (the schema itself was hit)."""
    return _is_corrupt(exc) or (
        isinstance(exc, sqlite3.DatabaseError) and any(m in str(exc) for m in _LOST_SCHEMA)
    )


class VectorIndex:
    """One store's vectors for one embedder. Use from one thread at a time.

    :param path: the SQLite file (``GoatHome.index_path(root, "<name>-vectors")``); the row
        files are named after it (``<path>-rows<generation>``).
    :param embedder: the loaded model; its ``identity`` keys the index.
    :param floor: the least score a note needs to be a search hit (the embedder's
        ``EmbedderSpec.semantic_floor``); ``None``: every note is one.
    """

    def __init__(self, path: Path, embedder: Embedder, floor: float | None = None) -> None:
        dims = embedder.dimensions
        if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
            raise ProviderUnavailable(
                f"embedder {embedder.identity!r} declares {dims!r} dimensions; a vector index "
                "needs at least one"
            )
        self.path = path
        self.embedder = embedder
        #: the least score a note needs to be a hit (``EmbedderSpec.semantic_floor``)
        self.floor = floor
        #: Why the index was rebuilt, wholly or in part, on open (``None``: it was not).
        self.rebuilt: str | None = None
        #: Set when the GOAT home cannot be written: the index is read as it is, and a sync
        #: that has anything to change raises this fault.
        self.read_only: StoreUnwritable | None = None
        self._map: _RowMap | None = None
        self._searched: tuple[_RowMap, frozenset[str]] | None = None
        self._rows: RowFile | None = None
        self._db = self._open()
        self._file = self._identity()
        try:
            with self._faults("it was opened"):
                lost = self._check_rows()
        except BaseException:
            self.close()
            raise
        if lost and self.rebuilt is None:
            self.rebuilt = lost

    # -- files ------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        """The SQLite file, opened for writing; on a GOAT home that cannot be written, opened
        read-only the way the keyword index is (``goat_core/filestore/search/_faults.py``), and
        :attr:`read_only` set.

        :raises StoreUnwritable: the home cannot be written and the file cannot be read."""
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
            except BaseException:
                db.close()
                raise
        except (OSError, sqlite3.OperationalError) as exc:
            fault = write_fault(exc, self.path, "the vector index")
            if fault is None:
                raise
            return self._connect_read_only(fault)
        return db

    def _connect_read_only(self, fault: StoreUnwritable) -> sqlite3.Connection:
        uri = Path(os.path.abspath(self.path)).as_uri()
        for mode in ("mode=ro", "immutable=1"):
            db = sqlite3.connect(f"{uri}?{mode}", uri=True, timeout=10.0, isolation_level=None)
            try:
                db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            except sqlite3.Error:
                db.close()
                continue
            self.read_only = fault
            return db
        raise fault

    def _open(self) -> sqlite3.Connection:
        try:
            db = self._connect()
            reason = self._check_schema(db)
        except sqlite3.DatabaseError as exc:
            if not _is_damage(exc):
                raise
            reason = f"vector index {self.path} was damaged ({exc}) and has been rebuilt"
            db = None
        if reason is None:
            assert db is not None
            return db
        if self.read_only is not None:  # it cannot be rebuilt on this disk
            if db is not None:
                db.close()
            raise self.read_only
        if db is not None:
            db.close()
        self._delete_files()
        db = self._connect()
        self._create(db)
        self.rebuilt = reason
        return db

    def _check_schema(self, db: sqlite3.Connection) -> str | None:
        """``None`` when the file is current; else why it must be rebuilt."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            if self.read_only is not None:
                raise self.read_only
            self._create(db)
            return None
        if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return f"vector index {self.path} failed its integrity check and has been rebuilt"
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema") != str(VECTOR_SCHEMA):
            return "the vector index schema changed; it has been rebuilt"
        if meta.get("identity") != self.embedder.identity:
            return (
                f"the embedder changed ({meta.get('identity')} -> {self.embedder.identity}); "
                "the vector index has been rebuilt"
            )
        return None

    def _create(self, db: sqlite3.Connection) -> None:
        with self._tx(db):
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            db.execute(
                "CREATE TABLE IF NOT EXISTS notes"
                " (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER)"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
                " start INTEGER, end INTEGER, heading TEXT,"
                " kind INTEGER NOT NULL,"  # 0: a chunk; 1: title and description
                " slot INTEGER NOT NULL, scale REAL NOT NULL, checksum INTEGER NOT NULL)"
            )
            db.execute("CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path)")
            db.execute("CREATE INDEX IF NOT EXISTS chunks_slot ON chunks(slot)")
            db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [
                    ("schema", str(VECTOR_SCHEMA)),
                    ("identity", self.embedder.identity),
                    ("rows", "0"),
                ],
            )

    def _rows_path(self, generation: str) -> str:
        return f"{self.path}-rows{generation}"

    def _delete_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)
        self._delete_rows(keep=None)

    def _delete_rows(self, keep: str | None) -> None:
        """Delete the row files of every generation but ``keep`` (all of them: ``None``); only
        under the write lock, when no other compaction can be writing one."""
        prefix = self.path.name + "-rows"
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self.path.parent):
                if entry.name.startswith(prefix) and entry.path != keep:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)

    def _generation(self) -> str:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'rows'").fetchone()
        return str(row[0]) if row else "0"

    def _row_file(self, generation: str | None = None) -> RowFile:
        """The row file of ``generation`` (default: the one the SQLite file names), reopened
        when another process compacted it or when the open file was deleted or replaced
        (rows appended to a deleted file would reach no other process)."""
        name = self._rows_path(self._generation() if generation is None else generation)
        if self._rows is None or self._rows.path != name or self._rows.replaced():
            if self._rows is not None:
                self._rows.close()
                self._rows = None
                self._map = None  # it read the file just closed
            self._rows = self._open_rows(name)
        return self._rows

    def _open_rows(self, name: str) -> RowFile:
        """The row file ``name``. A symbolic link in its place is removed, never followed (the
        rows it stood for are lost: the notes they held are re-embedded).

        :raises IndexDamaged: something else than a file is in its place (a folder)."""
        try:
            return RowFile(name, self.embedder.dimensions)
        except OSError as exc:
            if exc.errno == errno.ELOOP and self.read_only is None:
                os.unlink(name)
                return RowFile(name, self.embedder.dimensions)
            if exc.errno in (errno.EISDIR, errno.ELOOP):
                raise IndexDamaged(
                    f"{name} is not the vector rows file (a folder or a symbolic link is in its "
                    "place); move it away to let the vector index rebuild its rows"
                ) from exc
            raise

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _owned(self) -> bool:
        """Whether the SQLite file at :attr:`path` is still the one this index opened: a
        process left on an old embedder works on a file another process deleted and rebuilt,
        and must then touch none of the new index's row files."""
        return self._file is not None and self._identity() == self._file

    def is_current(self) -> bool:
        """Whether the file at :attr:`path` is still the one this index opened (not deleted,
        nor rebuilt by another process or another index object meanwhile)."""
        return self._owned()

    def _check_owned(self) -> None:
        if not self._owned():
            raise ProviderUnavailable(
                f"the vector index {self.path} was rebuilt by another process (its embedder "
                f"changed from {self.embedder.identity!r}, or its files were deleted); nothing "
                "was written: open it again"
            )

    @contextlib.contextmanager
    def _faults(self, doing: str) -> Any:
        """Around a read or write of the index: SQLite's errors as typed ones. A full or
        read-only disk is :class:`StoreUnwritable`; damage that the check on open missed
        rebuilds the index (it is derived data) and raises :class:`IndexDamaged`; anything
        else SQLite raises is :class:`ProviderUnavailable`."""
        try:
            yield
        except sqlite3.Error as exc:
            fault = write_fault(exc, self.path, "the vector index")
            if fault is not None:
                raise fault from exc
            if not _is_damage(exc):
                raise ProviderUnavailable(
                    f"the vector index {self.path} failed while {doing}: {exc}"
                ) from exc
            reason = f"the vector index {self.path} was found damaged while {doing} ({exc})"
            if self.read_only is not None:
                raise IndexDamaged(f"{reason}; it cannot be rebuilt on a read-only home") from exc
            self._reset(f"{reason}; it has been rebuilt")
            raise IndexDamaged(
                f"{reason}; it has been rebuilt, and every note is re-embedded at the next sync"
            ) from exc

    def _reset(self, reason: str) -> None:
        """Delete both files and start an empty index (every note is re-embedded)."""
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        if self._rows is not None:
            self._rows.close()
            self._rows = None
        self._map = None
        self._delete_files()
        self._db = self._connect()
        self._create(self._db)
        self._file = self._identity()
        self.rebuilt = reason

    def _check_rows(self) -> str | None:
        """Drop the notes whose rows lie past the row file's end (a missing or truncated
        file), so that the next sync re-embeds them; says so, or ``None``."""
        top = self._db.execute("SELECT max(slot) FROM chunks").fetchone()[0]
        if top is None:
            return None
        have = self._row_file().rows()
        if top < have:
            return None
        if self.read_only is not None:  # nothing can be dropped here: the search says so
            return None
        with self._tx(self._db):
            lost = [
                r[0]
                for r in self._db.execute(
                    "SELECT DISTINCT path FROM chunks WHERE slot >= ?", (have,)
                ).fetchall()
            ]
            self._drop(lost)
        return (
            f"the vector rows file {self._row_file().path} holds {have} rows, fewer than the "
            f"index refers to; the {len(lost)} notes whose rows were lost are re-embedded"
        )

    def _drop(self, paths: list[str]) -> None:
        """Delete ``paths``' chunks and stat rows (inside a transaction)."""
        self._db.executemany("DELETE FROM chunks WHERE path = ?", [(p,) for p in paths])
        self._db.executemany("DELETE FROM notes WHERE path = ?", [(p,) for p in paths])
        self._map = None

    @staticmethod
    @contextlib.contextmanager
    def _tx(db: sqlite3.Connection) -> Any:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # a damaged file may refuse even this
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()
        if self._rows is not None:
            self._rows.close()
            self._rows = None

    def size_bytes(self) -> int:
        """The SQLite file, its WAL and the current row file, in bytes."""
        files = [str(self.path), str(self.path) + "-wal", self._row_file().path]
        return sum(os.path.getsize(f) for f in files if os.path.exists(f))

    # -- sync -------------------------------------------------------------------------------
    def changes(self, listing: Iterable[tuple[str, int, int]]) -> int:
        """How many notes a :meth:`sync` with ``listing`` would embed or drop now (0: it has
        nothing to do). Reads only. :raises IndexDamaged, ProviderUnavailable: as :meth:`sync`.
        """
        with self._faults("it was read"):
            have = {
                p: (m, s) for p, m, s in self._db.execute("SELECT path, mtime_ns, size FROM notes")
            }
            current = {p: (m, s) for p, m, s in listing}
        return sum(p not in current for p in have) + sum(
            have.get(p) != st for p, st in current.items()
        )

    def sync(
        self,
        listing: Iterable[tuple[str, int, int]],
        load: Callable[[str], tuple[str, str, str] | None],
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """Bring the vectors in line with ``listing`` (``(path, mtime_ns, size)`` of every
        note the keyword index holds); ``load(path)`` gives ``(title, body, description)``
        (``None``: unreadable, skipped). ``progress(done, total)`` counts the notes to embed:
        ``(0, total)`` first, then after each batch, ending at ``(total, total)`` (nothing when
        no note changed). Returns counts ``embedded``, ``removed``, ``chunks``.

        :raises StoreUnwritable: the row file or the SQLite file cannot be written (a full or
            read-only home); what was committed before stays consistent.
        :raises ProviderUnavailable: the embedder returned vectors that are not one finite
            vector of its dimensions per text (nothing of that batch is stored), or the index
            was rebuilt by another process.
        :raises IndexDamaged: SQLite found the file damaged; it has been rebuilt empty."""
        with self._faults("it was synced"):
            return self._sync(listing, load, progress)

    def _sync(
        self,
        listing: Iterable[tuple[str, int, int]],
        load: Callable[[str], tuple[str, str, str] | None],
        progress: Callable[[int, int], None] | None,
    ) -> dict[str, int]:
        import numpy as np

        db = self._db
        have = {p: (m, s) for p, m, s in db.execute("SELECT path, mtime_ns, size FROM notes")}
        current = {p: (m, s) for p, m, s in listing}
        gone = [p for p in have if p not in current]
        todo = [p for p, st in current.items() if have.get(p) != st]
        del have
        if (gone or todo) and self.read_only is not None:
            raise self.read_only
        if gone:
            with self._tx(db):
                self._drop(gone)
        embedded = chunks_done = processed = reported = 0
        total = len(todo)
        if progress is not None and total:
            progress(0, total)
        batch: list[tuple[str, Any, list[Any], str]] = []  # path, stat, chunks, note text
        pending_chunks = 0

        def flush() -> None:
            nonlocal batch, pending_chunks, embedded, chunks_done, reported
            if not batch:
                return
            texts = [t for _, _, cs, nt in batch for t in (*(c.embed_text for c in cs), nt)]
            owner = [p for p, _, cs, _ in batch for _ in range(len(cs) + 1)]
            vecs = self._checked(self._call(self.embedder.embed_documents, texts), owner)
            scales = np.abs(vecs).max(axis=1) / np.float32(127.0)
            scales[scales == 0] = 1.0
            ints = np.round(vecs / scales[:, None]).astype(np.int8)
            sums = checksums(ints)
            self._check_owned()
            with self._tx(db):  # every note of the batch with its chunks, or none
                try:
                    top = db.execute("SELECT max(slot) FROM chunks").fetchone()[0]
                    # past every slot referred to, even if the file was cut short
                    first = self._row_file().append(ints, 0 if top is None else top + 1)
                except OSError as exc:
                    typed = StoreUnwritable.from_os_error(exc, self.path)
                    if typed is None:
                        raise
                    raise typed from exc
                rows = []
                i = 0
                for path, _st, cs, _nt in batch:
                    for c in (*cs, None):  # the chunks, then the note's own row
                        at = (first + i, float(scales[i]), int(sums[i]))
                        i += 1
                        if c is None:
                            rows.append((path, 0, 0, "", 1, *at))
                        else:
                            rows.append((path, c.start, c.end, c.heading, 0, *at))
                db.executemany("DELETE FROM chunks WHERE path = ?", [(p,) for p, _, _, _ in batch])
                db.executemany(
                    "INSERT INTO chunks (path, start, end, heading, kind, slot, scale, checksum)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                db.executemany(
                    "INSERT OR REPLACE INTO notes VALUES (?, ?, ?)",
                    [(p, st[0], st[1]) for p, st, _, _ in batch],
                )
            embedded += len(batch)
            chunks_done += len(rows) - len(batch)
            batch = []
            pending_chunks = 0
            self._map = None
            if progress is not None:
                progress(processed, total)  # skipped unreadable notes count as done
                reported = processed

        for path in todo:
            processed += 1
            loaded = load(path)
            if loaded is None:
                continue
            title, body, description = loaded
            cs = chunk_note(title, body, description)
            batch.append((path, current[path], cs, note_text(title, description)))
            pending_chunks += len(cs) + 1
            if pending_chunks >= EMBED_BATCH:
                flush()
        flush()
        if progress is not None and total and reported != total:
            progress(total, total)  # the last notes were unreadable: still done
        if gone or embedded:
            self._compact_if_sparse()
        return {"embedded": embedded, "removed": len(gone), "chunks": chunks_done}

    def _refused(self, what: str) -> ProviderUnavailable:
        return ProviderUnavailable(
            f"embedder {self.embedder.identity!r} returned {what}; nothing of them was stored"
        )

    def _call(self, embed: Callable[[Any], Any], texts: Any) -> Any:
        """``embed(texts)``, the embedder plugin's own failure typed.

        :raises ProviderUnavailable: the embedder raised something else than a GoatError."""
        try:
            return embed(texts)
        except GoatError:
            raise
        except Exception as exc:  # a plugin's bug or its runtime's: typed, named
            raise ProviderUnavailable(
                f"embedder {self.embedder.identity!r} failed ({type(exc).__name__}: {exc})"
            ) from exc

    def _checked(self, got: Any, owner: list[str]) -> Any:
        """The document vectors ``got`` for the texts of the notes ``owner`` (one per text), as
        float32, once they are one finite vector of the embedder's dimensions per text.

        :raises ProviderUnavailable: they are not (naming the first note they fail for)."""
        import numpy as np

        dim = self.embedder.dimensions
        try:
            vecs = np.asarray(got, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise self._refused(f"document vectors that are not numbers ({exc})") from exc
        if vecs.shape != (len(owner), dim):
            raise self._refused(
                f"document vectors of shape {vecs.shape} for {len(owner)} texts; expected one "
                f"vector of {dim} dimensions per text"
            )
        bad = np.nonzero(~np.isfinite(vecs).all(axis=1))[0]
        if len(bad):
            raise self._refused(
                f"{len(bad)} document vectors holding NaN or infinite values (the first for "
                f"{owner[int(bad[0])]})"
            )
        return vecs

    def _query_vector(self, query: str) -> Any:
        """The embedder's vector for ``query``, once it is one finite, non-zero vector of the
        embedder's dimensions. A zero vector has no direction: every note would score 0 and
        come back as a hit, so it is refused like a broken one (the recall then says
        ``degraded``) rather than ranking nothing as if it were a ranking.

        :raises ProviderUnavailable: it is not."""
        import numpy as np

        dim = self.embedder.dimensions
        got = self._call(self.embedder.embed_query, query)
        try:
            q = np.asarray(got, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise self._refused(f"a query vector that is not numbers ({exc})") from exc
        if q.shape != (dim,):
            raise self._refused(f"a query vector of {q.size} values, not {dim} dimensions")
        if not np.isfinite(q).all():
            raise self._refused("a query vector holding NaN or infinite values")
        if not np.any(q):
            raise self._refused("a zero query vector, which ranks nothing")
        return q

    def _compact_if_sparse(self) -> None:
        """Copy the live rows into a new row file when dead rows exceed
        :data:`COMPACT_DEAD` of the live ones (see the module docstring)."""
        import numpy as np

        db = self._db
        if not self._owned():
            return  # another process rebuilt the index: its row files are not this one's
        with self._tx(db):
            live = int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])
            old = self._row_file()
            top = db.execute("SELECT max(slot) FROM chunks").fetchone()[0]
            if old.rows() - live <= COMPACT_DEAD * live or (top or 0) >= old.rows():
                return  # not sparse, or cut short (the next search finds and drops that)
            slots = np.fromiter(
                (r[0] for r in db.execute("SELECT slot FROM chunks ORDER BY slot")),
                dtype=np.int64,
                count=live,
            )
            generation = str(
                int(db.execute("SELECT value FROM meta WHERE key='rows'").fetchone()[0]) + 1
            )
            self._delete_rows(keep=old.path)  # an interrupted compaction's file, if any
            new = RowFile(self._rows_path(generation), old.dimensions)
            try:
                os.ftruncate(new.fd, 0)
                try:
                    old.copy_rows(slots, new)
                except ShortRead:
                    # cut short by someone else since the check above: leave the compaction
                    # for later; the next search finds the short file and drops its notes
                    raise _Stale from None
                new.sync()
                db.execute(
                    "UPDATE chunks SET slot = r.n FROM (SELECT id, row_number() OVER"
                    " (ORDER BY slot) - 1 AS n FROM chunks) AS r WHERE chunks.id = r.id"
                )
                db.execute("UPDATE meta SET value = ? WHERE key = 'rows'", (generation,))
            except BaseException as exc:
                new.close()
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(new.path)
                if isinstance(exc, _Stale):
                    return
                raise
            new.close()
            self._map = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(old.path)  # a reader that still maps it keeps its pages until it reloads

    def embedded(self, paths: Iterable[str]) -> set[str]:
        """Which of ``paths`` hold vectors (embedded at some state of the note, maybe an
        older one). Right after a :meth:`search`, as the snapshot that search ranked holds
        them, so another connection's commit since (a background embedding) cannot make a
        note count as embedded whose vectors the search did not score. Otherwise (no search
        yet, or this object changed the index since: a sync, a repair), a row in ``notes``.
        A note written since the last sync, or one whose embedding is still under way, is
        not among them. Reads only. :raises IndexDamaged, ProviderUnavailable,
        StoreUnwritable: as :meth:`changes`."""
        searched = self._searched
        if searched is not None and searched[0] is self._map:
            return {p for p in paths if p in searched[1]}
        wanted = list(dict.fromkeys(paths))
        out: set[str] = set()
        with self._faults("it was read"):
            for i in range(0, len(wanted), 500):  # below SQLite's bound on parameters
                part = wanted[i : i + 500]
                marks = ",".join("?" * len(part))
                out.update(
                    p
                    for (p,) in self._db.execute(
                        f"SELECT path FROM notes WHERE path IN ({marks})", part
                    )
                )
        return out

    def note_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM notes").fetchone()[0])

    # -- search -----------------------------------------------------------------------------
    def _row_map(self) -> _RowMap:
        """The slots' map, reloaded when this or another process changed the index; read row
        by row into arrays (no list of all rows: at 100k notes that list alone is hundreds of
        MB). The generation, its row file and every slot are read in one snapshot of the
        SQLite file, so a commit by another process between them cannot mix two states; the
        row file stays open with the map, so a compaction by another process (which deletes
        the old file) leaves this map's rows readable.

        :raises _Stale: the row file ends before a row the map refers to, and the index's
            generation changed meanwhile (a compaction: read the map again).
        :raises IndexDamaged: the row file ends before a row the index refers to."""
        import numpy as np

        db = self._db
        version = int(db.execute("PRAGMA data_version").fetchone()[0])
        if self._map is not None and self._map.version == version:
            return self._map
        self._map = None
        db.execute("BEGIN")
        try:
            generation = self._generation()
            rows = self._row_file(generation)
            top = db.execute("SELECT max(slot) FROM chunks").fetchone()[0]
            n = 0 if top is None else int(top) + 1
            if n > rows.rows():
                db.execute("COMMIT")
                self._lost(
                    f"the vector rows file {rows.path} ends before row {n - 1}",
                    [],
                    rows.rows(),
                    generation,
                )
            scale = np.zeros(n, dtype=np.float32)
            check = np.zeros(n, dtype=np.float32)
            kind = np.full(n, -1, dtype=np.int8)
            starts: list[int] = []
            note_row: list[int] = []
            paths: list[str] = []
            last = None
            seen: set[str] = set()
            for slot, path, k, sc, ck in db.execute(
                "SELECT slot, path, kind, scale, checksum FROM chunks ORDER BY slot"
            ):
                if path != last:
                    if path in seen:  # written in one batch, a note's rows are consecutive
                        db.execute("COMMIT")
                        self._lost(
                            f"the rows of {path} in {rows.path} are not consecutive",
                            [slot],
                            None,
                            generation,
                        )
                    seen.add(path)
                    last = path
                    starts.append(slot)
                    note_row.append(-1)
                    paths.append(path)
                scale[slot], check[slot], kind[slot] = sc, ck, k
                if k == 1:
                    note_row[-1] = slot
        finally:
            if db.in_transaction:
                db.execute("COMMIT")
        start_arr = np.asarray(starts, dtype=np.intp)
        ends = np.append(start_arr[1:], n).astype(np.intp)
        self._map = _RowMap(
            slots=n,
            scale=scale,
            check=check,
            live=kind >= 0,
            chunk=kind == 0,
            starts=start_arr,
            ends=ends,
            note_row=np.asarray(note_row, dtype=np.intp),
            paths=paths,
            version=version,
            generation=generation,
            rows=rows,
        )
        return self._map

    def _lost(self, what: str, slots: list[int], past: int | None, generation: str) -> NoReturn:
        """Drop the notes holding ``slots`` or any slot from ``past`` on (slots of the row
        file's ``generation``), then raise.

        :raises _Stale: the index is at another generation now (another process compacted
            it): the slots name other rows, nothing is dropped.
        :raises IndexDamaged: otherwise, saying ``what`` was found."""
        db = self._db
        self._map = None
        if self.read_only is not None:
            if self._generation() != generation:
                raise _Stale
            raise IndexDamaged(f"{what}; it cannot be repaired on a read-only home")
        found: set[str] = set()
        with self._tx(db):
            if self._generation() != generation:
                raise _Stale
            for slot in slots:
                found.update(
                    r[0] for r in db.execute("SELECT path FROM chunks WHERE slot = ?", (slot,))
                )
            if past is not None:
                found.update(
                    r[0]
                    for r in db.execute("SELECT DISTINCT path FROM chunks WHERE slot >= ?", (past,))
                )
            self._drop(sorted(found))
        raise IndexDamaged(
            f"{what}; the {len(found)} notes it holds were dropped from the vector index and "
            "are re-embedded at the next sync"
        )

    def search(self, query: str, limit: int) -> list[ChunkHit]:
        """The ``limit`` best notes for ``query``, best first, one hit per note: the cosine of
        its best chunk plus :data:`NOTE_WEIGHT` times the cosine of its title-and-description
        row (a long note counts its best section, never the sum), with that chunk's offsets;
        only notes scoring at least :attr:`floor` when it is set.

        A search that finds rows missing or mismatched just as another process compacted the
        row file reads the new generation's map once more: only damage found within one
        generation drops notes.

        :raises IndexDamaged: a row the index refers to is missing from the row file or does
            not match its checksum (its notes are dropped, so the next sync re-embeds them),
            or SQLite found its file damaged (rebuilt empty).
        :raises ProviderUnavailable: the embedder's query vector is not one finite, non-zero
            vector of its dimensions, or SQLite failed otherwise."""
        with self._faults("it was searched"):
            try:
                return self._search(query, limit)
            except _Stale:
                pass
            try:
                return self._search(query, limit)
            except _Stale:
                raise IndexDamaged(
                    f"the vector rows file of {self.path} changed twice during one search; "
                    "the vector ranking was not read"
                ) from None

    def _search(self, query: str, limit: int) -> list[ChunkHit]:
        import numpy as np

        m = self._row_map()
        if self._searched is None or self._searched[0] is not m:
            self._searched = (m, frozenset(m.paths))  # what embedded() answers from
        if not m.paths:
            return []
        q = self._query_vector(query)
        rows = m.rows
        try:
            sims, checks = rows.scan(q, m.slots)
        except ShortRead as exc:
            self._lost(
                f"the vector rows file {rows.path} holds only {exc.rows} rows",
                [],
                exc.rows,
                m.generation,
            )
        bad = np.nonzero(m.live & (checks != m.check))[0]
        if len(bad):
            self._lost(
                f"{len(bad)} rows of the vector rows file {rows.path} do not match their checksums",
                [int(b) for b in bad],
                None,
                m.generation,
            )
        sims *= m.scale
        best = sims.copy()
        best[~m.chunk] = -np.inf
        score = np.maximum.reduceat(best, m.starts)
        has_row = m.note_row >= 0
        score[has_row] += np.float32(NOTE_WEIGHT) * sims[m.note_row[has_row]]
        if self.floor is not None:
            score[score < np.float32(self.floor)] = -np.inf
        k = min(limit, int(np.isfinite(score).sum()))
        if k <= 0:
            return []
        top = np.argpartition(-score, k - 1)[:k]
        top = top[np.argsort(-score[top], kind="stable")]
        best_slot = [int(m.starts[n]) + int(np.argmax(best[m.starts[n] : m.ends[n]])) for n in top]
        marks = ",".join("?" * len(best_slot))
        where = self._db.execute(
            f"SELECT slot, start, end, heading FROM chunks WHERE slot IN ({marks})", best_slot
        )
        offsets = {slot: (start, end, heading) for slot, start, end, heading in where}
        return [
            ChunkHit(m.paths[int(note)], float(score[note]), *offsets.get(slot, (0, 0, "")))
            for note, slot in zip(top, best_slot, strict=True)
        ]
