"""The vector index of a folder store: heading-section chunks of every note, embedded by the
binding's embedder, kept in one SQLite file under the GOAT home (never in the store).

- Incremental: :meth:`VectorIndex.sync` takes the keyword index's listing (path, mtime,
  size) and embeds only new or changed notes; rows of vanished notes are dropped.
- Crash-safe: each note's chunks and its stat row are written in one transaction (WAL), so
  after ``kill -9`` a note is either fully indexed at its old stat or at its new one; the
  next sync re-embeds whatever is not current.
- Rebuilt when the embedder's ``identity`` (model id, revision, weights sha256) changes,
  when the schema changes, and when SQLite reports the file damaged (the file is deleted
  and rebuilt; :attr:`VectorIndex.rebuilt` says why).
- Plain SQLite only (no extension): vectors are int8 rows with one float scale each
  (about a quarter of float32's size); search is a brute-force dot product in NumPy over
  blocks of rows, so memory stays bounded.
- Besides its heading-section chunks, every note has one row for its title and description
  (:func:`~goat_core.filestore.search._chunks.note_text`, ``kind`` 1). A note scores the
  cosine of its best chunk plus :data:`NOTE_WEIGHT` times the cosine of that row: what the
  whole note is about counts beside its best section, and a long note still gains nothing
  from its number of sections.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goat_core.contract import Embedder
from goat_core.filestore.search._chunks import chunk_note, note_text

VECTOR_SCHEMA = 2
#: Weight of a note's title-and-description row beside its best chunk: of 0 to 0.5, the best
#: sum over both embedders of ``plugins/embed`` of the hybrid MRR@10 on the tuning
#: half of ``benchmarks/questions/en_questions.tsv`` with the descriptions kept at 0.97
#: (``benchmarks/eval_recall.py --note-weights``); reported on the other half. Aliases, section
#: headings or link anchor text in that row did not gain on the tuning half
#: (``benchmarks/eval_variants.py``).
NOTE_WEIGHT = 0.2
#: Chunks embedded per call to the model.
EMBED_BATCH = 32
#: Rows multiplied at once by a query (bounds the float32 copy of the int8 matrix and keeps
#: it in the CPU's cache: 1024 x 384 x 4 bytes = 1.5 MB; 8192 rows, 12 MB, made a scan of
#: 22k rows three times slower).
SEARCH_BLOCK = 1024

_CORRUPT = ("malformed", "not a database", "file is encrypted", "disk image")


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


def _is_corrupt(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.DatabaseError) and any(m in str(exc) for m in _CORRUPT)


class VectorIndex:
    """One store's vectors for one embedder. Use from one thread at a time.

    :param path: the SQLite file (``GoatHome.index_path(root, "<name>-vectors")``).
    :param embedder: the loaded model; its ``identity`` keys the index.
    """

    def __init__(self, path: Path, embedder: Embedder) -> None:
        self.path = path
        self.embedder = embedder
        #: Why the index was rebuilt from scratch on open (``None``: it was not).
        self.rebuilt: str | None = None
        self._matrix: Any = None  # (int8 rows, float32 scales, chunk meta) or None: stale
        self._db = self._open()

    # -- file -------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _open(self) -> sqlite3.Connection:
        try:
            db = self._connect()
            reason = self._check_schema(db)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            reason = f"vector index {self.path} was damaged ({exc}) and has been rebuilt"
            db = None
        if reason is None:
            assert db is not None
            return db
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
                " start INTEGER, end INTEGER, heading TEXT, scale REAL, vec BLOB,"
                " kind INTEGER NOT NULL DEFAULT 0)"  # 0: a chunk; 1: title and description
            )
            db.execute("CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path)")
            db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [("schema", str(VECTOR_SCHEMA)), ("identity", self.embedder.identity)],
            )

    def _delete_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)

    @staticmethod
    @contextlib.contextmanager
    def _tx(db: sqlite3.Connection) -> Any:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def size_bytes(self) -> int:
        return sum(
            os.path.getsize(str(self.path) + s)
            for s in ("", "-wal")
            if os.path.exists(str(self.path) + s)
        )

    # -- sync -------------------------------------------------------------------------------
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
        no note changed). Returns counts ``embedded``, ``removed``, ``chunks``."""
        import numpy as np

        db = self._db
        have = {p: (m, s) for p, m, s in db.execute("SELECT path, mtime_ns, size FROM notes")}
        current = {p: (m, s) for p, m, s in listing}
        gone = [p for p in have if p not in current]
        todo = [p for p, st in current.items() if have.get(p) != st]
        if gone:
            with self._tx(db):
                db.executemany("DELETE FROM chunks WHERE path = ?", [(p,) for p in gone])
                db.executemany("DELETE FROM notes WHERE path = ?", [(p,) for p in gone])
            self._matrix = None
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
            vecs = np.asarray(self.embedder.embed_documents(texts), dtype=np.float32)
            rows = []
            i = 0
            for path, _st, cs, _nt in batch:
                for c in (*cs, None):  # the chunks, then the note's own row
                    v = vecs[i]
                    i += 1
                    scale = float(np.abs(v).max()) / 127.0 or 1.0
                    q = np.round(v / scale).astype(np.int8).tobytes()
                    if c is None:
                        rows.append((path, 0, 0, "", scale, q, 1))
                    else:
                        rows.append((path, c.start, c.end, c.heading, scale, q, 0))
            with self._tx(db):  # every note of the batch with its chunks, or none
                db.executemany("DELETE FROM chunks WHERE path = ?", [(p,) for p, _, _, _ in batch])
                db.executemany(
                    "INSERT INTO chunks (path, start, end, heading, scale, vec, kind)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
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
            self._matrix = None
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
        return {"embedded": embedded, "removed": len(gone), "chunks": chunks_done}

    def note_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM notes").fetchone()[0])

    # -- search -----------------------------------------------------------------------------
    def _load_matrix(self) -> Any:
        """``(int8 rows, scales, note number per row, chunk id per row, note-row flags, note
        paths)``, read row by row (no list of all rows: at 100k notes that list alone is
        hundreds of MB)."""
        import numpy as np

        if self._matrix is None:
            db = self._db
            n = int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])
            dim = self.embedder.dimensions
            mat = np.empty((n, dim), dtype=np.int8)
            scales = np.empty(n, dtype=np.float32)
            note_of = np.empty(n, dtype=np.int32)
            chunk_id = np.empty(n, dtype=np.int64)
            is_note = np.empty(n, dtype=bool)
            paths: list[str] = []
            number: dict[str, int] = {}
            i = 0
            for cid, path, scale, vec, kind in db.execute(
                "SELECT id, path, scale, vec, kind FROM chunks ORDER BY id"
            ):
                if i >= n:
                    break
                k = number.get(path)
                if k is None:
                    k = number[path] = len(paths)
                    paths.append(path)
                mat[i] = np.frombuffer(vec, dtype=np.int8)
                scales[i], note_of[i], chunk_id[i], is_note[i] = scale, k, cid, kind == 1
                i += 1
            self._matrix = (mat[:i], scales[:i], note_of[:i], chunk_id[:i], is_note[:i], paths)
        return self._matrix

    def search(self, query: str, limit: int) -> list[ChunkHit]:
        """The ``limit`` best notes for ``query``, best first, one hit per note: the cosine of
        its best chunk plus :data:`NOTE_WEIGHT` times the cosine of its title-and-description
        row (a long note counts its best section, never the sum), with that chunk's offsets."""
        import numpy as np

        mat, scales, note_of, chunk_id, is_note, paths = self._load_matrix()
        if not len(mat):
            return []
        q = np.asarray(self.embedder.embed_query(query), dtype=np.float32).reshape(-1)
        sims = np.empty(len(mat), dtype=np.float32)
        for lo in range(0, len(mat), SEARCH_BLOCK):
            block = mat[lo : lo + SEARCH_BLOCK].astype(np.float32)
            sims[lo : lo + SEARCH_BLOCK] = (block @ q) * scales[lo : lo + SEARCH_BLOCK]
        chunk = ~is_note
        score = np.full(len(paths), -np.inf, dtype=np.float32)
        np.maximum.at(score, note_of[chunk], sims[chunk])
        score[note_of[is_note]] += np.float32(NOTE_WEIGHT) * sims[is_note]
        k = min(limit, int(np.isfinite(score).sum()))
        if k <= 0:
            return []
        top = np.argpartition(-score, k - 1)[:k]
        top = top[np.argsort(-score[top], kind="stable")]
        # the best chunk row of each of those notes
        rows = np.nonzero(chunk & np.isin(note_of, top))[0]
        rows = rows[np.lexsort((-sims[rows], note_of[rows]))]
        best_row: dict[int, int] = {}
        for r in rows:
            best_row.setdefault(int(note_of[r]), int(r))
        hits: list[ChunkHit] = []
        for note in top:
            start, end, heading = self._db.execute(
                "SELECT start, end, heading FROM chunks WHERE id = ?",
                (int(chunk_id[best_row[int(note)]]),),
            ).fetchone() or (0, 0, "")
            hits.append(ChunkHit(paths[int(note)], float(score[note]), start, end, heading))
        return hits
