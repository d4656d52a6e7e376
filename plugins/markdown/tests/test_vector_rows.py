"""The vector index's row file (goat_core/filestore/search/_rowfile.py): rows beside the
SQLite file under the GOAT home, appended, compacted, and every kind of damage to it found and
repaired by re-embedding exactly the notes it hit (fake embedder: plumbing only)."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import test_hybrid
from test_hybrid import NOTES, FakeEmbedder, _spec, _vector_file

from goat_core.errors import IndexDamaged, ProviderUnavailable
from goat_core.filestore.search import VectorIndex
from goat_core.host import GoatHome

home, stores, vault = test_hybrid.home, test_hybrid.stores, test_hybrid.vault  # fixtures

pytestmark = pytest.mark.anyio

DIM = FakeEmbedder.dimensions


class NoteEmbedder(FakeEmbedder):
    """One dimension per note name (``n007`` -> 7, ``new`` -> 50) plus a shared one, so each
    note's own name finds it first."""

    def _vec(self, text: str) -> Any:
        v = np.zeros(self.dimensions, dtype=np.float32)
        v[63] = 0.5
        for name in re.findall(r"\bn(\d{3}|ew)\b", text):
            v[50 if name == "ew" else int(name)] += 1.0
        return v / np.linalg.norm(v)


LISTING = [(f"n{i:03}.md", 1, 1) for i in range(40)]


def _load(path: str) -> tuple[str, str, str]:
    return path, f"## One\n\nbody of {path}\n\n## Two\n\nmore about {path}\n", ""


def _rows_files(index_path: Path) -> list[Path]:
    return sorted(index_path.parent.glob(index_path.name + "-rows*"))


def _slots(index_path: Path, note: str) -> list[int]:
    db = sqlite3.connect(index_path)
    try:
        rows = db.execute("SELECT slot FROM chunks WHERE path = ? ORDER BY slot", (note,))
        return [r[0] for r in rows]
    finally:
        db.close()


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Path, FakeEmbedder]:
    path = tmp_path / "home" / "v.sqlite"
    fake = NoteEmbedder()
    index = VectorIndex(path, fake)
    index.sync(LISTING, _load)
    index.close()
    return path, fake


def test_rows_are_a_flat_file_beside_the_index(filled: tuple[Path, FakeEmbedder]) -> None:
    path, fake = filled
    (rows,) = _rows_files(path)
    assert rows == Path(f"{path}-rows0")
    assert rows.stat().st_size == 40 * 3 * DIM  # two chunks and the note row per note
    db = sqlite3.connect(path)
    columns = {r[1] for r in db.execute("PRAGMA table_info(chunks)")}
    db.close()
    assert "vec" not in columns and {"slot", "scale", "checksum"} <= columns
    index = VectorIndex(path, fake)
    assert index.search("body of n007.md", 1)[0].path == "n007.md"
    assert index.size_bytes() >= rows.stat().st_size
    index.close()


def test_edit_appends_only_that_note_and_compaction_keeps_the_ranking(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    path, _ = filled
    fake = NoteEmbedder()
    index = VectorIndex(path, fake)
    before = {(h.path, h.score, h.start, h.end) for h in index.search("more about n011.md", 40)}
    listing = [(p, 2, 1) if p == "n003.md" else (p, m, s) for p, m, s in LISTING]
    assert index.sync(listing, _load)["embedded"] == 1
    assert len(fake.embedded) == 3  # that note's two chunks and its note row, nothing else
    (rows,) = _rows_files(path)
    assert rows.stat().st_size == 41 * 3 * DIM  # appended; its old rows are dead
    assert _slots(path, "n003.md") == [120, 121, 122]
    # 13 notes re-embedded: 42 dead rows for 120 live ones, over a quarter: compacted
    listing = [(p, 3, 1) if p < "n013.md" else (p, m, s) for p, m, s in listing]
    assert index.sync(listing, _load)["embedded"] == 13
    (rows,) = _rows_files(path)
    assert rows.name.endswith("-rows1") and rows.stat().st_size == 40 * 3 * DIM
    assert sorted(s for i in range(40) for s in _slots(path, f"n{i:03}.md")) == list(range(120))
    after = index.search("more about n011.md", 40)
    assert after[0].path == "n011.md"
    assert {(h.path, h.score, h.start, h.end) for h in after} == before  # ties in any order
    index.close()


def test_truncated_rows_file_loses_only_the_notes_past_its_end(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    path, _ = filled
    (rows,) = _rows_files(path)
    os.truncate(rows, (120 - 4) * DIM)  # the last note's three rows and one of the one before
    fake = NoteEmbedder()
    index = VectorIndex(path, fake)
    assert index.rebuilt == (
        f"the vector rows file {rows} holds 116 rows, fewer than the index refers to; "
        "the 2 notes whose rows were lost are re-embedded"
    )
    assert index.note_count() == 38
    assert index.sync(LISTING, _load)["embedded"] == 2
    assert index.search("body of n039.md", 1)[0].path == "n039.md"
    index.close()


def test_missing_rows_file_re_embeds_every_note(filled: tuple[Path, FakeEmbedder]) -> None:
    path, _ = filled
    (rows,) = _rows_files(path)
    rows.unlink()
    index = VectorIndex(path, NoteEmbedder())
    assert index.rebuilt is not None and "holds 0 rows" in index.rebuilt
    assert "the 40 notes whose rows were lost" in index.rebuilt
    assert index.note_count() == 0
    assert index.sync(LISTING, _load)["embedded"] == 40
    index.close()


def test_a_flipped_byte_is_found_by_the_search_and_only_its_note_re_embedded(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    path, _ = filled
    fake = NoteEmbedder()
    index = VectorIndex(path, fake)
    assert index.search("body of n020.md", 1)[0].path == "n020.md"
    (rows,) = _rows_files(path)
    slot = _slots(path, "n020.md")[1]
    with open(rows, "r+b") as f:
        f.seek(slot * DIM + 5)
        byte = f.read(1)
        f.seek(slot * DIM + 5)
        f.write(bytes([byte[0] ^ 0x10]))
    with pytest.raises(IndexDamaged) as caught:
        index.search("body of n020.md", 1)
    assert str(caught.value) == (
        f"1 rows of the vector rows file {rows} do not match their checksums; the 1 notes "
        "it holds were dropped from the vector index and are re-embedded at the next sync"
    )
    assert index.note_count() == 39
    assert index.sync(LISTING, _load)["embedded"] == 1
    assert index.search("body of n020.md", 1)[0].path == "n020.md"
    index.close()


def test_rows_file_truncated_under_an_open_index(filled: tuple[Path, FakeEmbedder]) -> None:
    path, _ = filled
    index = VectorIndex(path, NoteEmbedder())
    index.search("warm", 1)
    (rows,) = _rows_files(path)
    os.truncate(rows, 100 * DIM)  # notes n033 (one row left) to n039 lose rows
    with pytest.raises(IndexDamaged, match=r"holds only 100 rows; the 7 notes it holds"):
        index.search("body of n039.md", 1)
    assert index.note_count() == 33
    assert index.sync(LISTING, _load)["embedded"] == 7
    assert index.search("body of n039.md", 1)[0].path == "n039.md"
    index.close()


def test_a_torn_row_at_the_end_is_skipped(filled: tuple[Path, FakeEmbedder]) -> None:
    """A write cut short by ``kill -9`` before its commit leaves part of a row at the end:
    nothing refers to it, and the next rows start after it."""
    path, _ = filled
    (rows,) = _rows_files(path)
    with open(rows, "ab") as f:
        f.write(b"\x7f" * 10)
    index = VectorIndex(path, NoteEmbedder())
    assert index.rebuilt is None
    assert index.sync([*LISTING, ("new.md", 1, 1)], _load)["embedded"] == 1
    assert _slots(path, "new.md") == [121, 122, 123]
    assert index.search("body of new.md", 1)[0].path == "new.md"
    index.close()


def test_another_process_writes_and_compacts(filled: tuple[Path, FakeEmbedder]) -> None:
    """A second connection's sync (new rows, then a compaction into a new file) is seen by an
    index that was already open, without reopening it."""
    path, _ = filled
    reader = VectorIndex(path, NoteEmbedder())
    assert reader.search("body of n001.md", 1)[0].path == "n001.md"
    writer = VectorIndex(path, NoteEmbedder())
    listing = [(p, 5, 1) for p, _, _ in LISTING[:20]] + [("new.md", 1, 1)]
    writer.sync(listing, _load)  # 20 gone, 20 re-embedded, 1 new: compacted
    assert [f.name[-5:] for f in _rows_files(path)] == ["rows1"]
    assert reader.search("body of new.md", 1)[0].path == "new.md"
    assert reader.search("body of n030.md", 3)[0].path != "n030.md"  # gone
    writer.close()
    reader.close()


async def test_recall_repairs_a_damaged_row_file(stores: Any, home: GoatHome, vault: Path) -> None:
    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    assert (await store.recall("between laptop and desktop", limit=10)).items[0].path == (
        "Sync across devices.md"
    )
    path = _vector_file(home, vault)
    (rows,) = _rows_files(path)
    hit = [p for p in NOTES if min(_slots(path, p)) < 4]
    expected = sum(len(_slots(path, p)) for p in hit)  # those notes' texts, embedded again
    total = rows.stat().st_size // DIM
    data = bytearray(rows.read_bytes())
    data[: 4 * DIM] = bytes(4 * DIM)  # zero the first four rows
    rows.write_bytes(bytes(data))
    embedded = len(fake.embedded)
    result = await store.recall("between laptop and desktop", limit=10)
    assert result.items[0].path == "Sync across devices.md"
    assert result.complete and result.degraded == ()
    assert len(fake.embedded) - embedded == expected < total


async def test_recall_says_degraded_when_the_repair_fails(
    stores: Any, home: GoatHome, vault: Path
) -> None:
    class Breaks(FakeEmbedder):
        broken = False

        def embed_documents(self, texts: Any) -> Any:
            if self.broken:
                raise ProviderUnavailable("model gone")
            return super().embed_documents(texts)

    fake = Breaks()
    store = stores(vault, "fake", _spec(fake))
    await store.recall("phone", limit=1)
    (rows,) = _rows_files(_vector_file(home, vault))
    os.truncate(rows, 0)
    fake.broken = True
    result = await store.recall("refunds money back", limit=3)
    assert not result.complete
    assert result.items[0].path == "Refunds.md"  # the keyword side still answers
    (why,) = result.degraded
    assert why.startswith("semantic recall with embedder 'fake' is unavailable (model gone)")


def test_rows_appended_after_a_cut_never_reuse_a_referred_slot(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    path, _ = filled
    index = VectorIndex(path, NoteEmbedder())
    (rows,) = _rows_files(path)
    os.truncate(rows, 100 * DIM)  # under the open index, before its next sync
    assert index.sync([*LISTING, ("new.md", 1, 1)], _load)["embedded"] == 1
    assert _slots(path, "new.md") == [120, 121, 122]  # not 100: n033..n039 still refer there
    with pytest.raises(IndexDamaged, match=r"the 7 notes it holds"):
        index.search("body of new.md", 1)
    assert index.sync([*LISTING, ("new.md", 1, 1)], _load)["embedded"] == 7
    assert index.search("body of new.md", 1)[0].path == "new.md"
    assert index.search("body of n035.md", 1)[0].path == "n035.md"
    index.close()


def test_a_row_file_opened_read_only_refuses_writes_typed(
    filled: tuple[Path, FakeEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GOAT home that became read-only: searches read the rows, a sync that has something
    to embed is ``StoreUnwritable`` (read-only) and changes nothing."""
    from goat_core.errors import StoreUnwritable

    real_open = os.open

    def no_write(file: Any, flags: int, *args: Any) -> int:
        if flags & os.O_RDWR:
            raise PermissionError(13, "Permission denied", file)
        return real_open(file, flags, *args)

    path, _ = filled
    monkeypatch.setattr(os, "open", no_write)
    index = VectorIndex(path, NoteEmbedder())
    assert index.search("body of n004.md", 1)[0].path == "n004.md"
    with pytest.raises(StoreUnwritable) as caught:
        index.sync([*LISTING, ("new.md", 1, 1)], _load)
    assert caught.value.reason == "read-only"
    assert index.note_count() == 40
    assert (Path(f"{path}-rows0")).stat().st_size == 120 * DIM
    index.close()


def test_compaction_removes_an_interrupted_compactions_file(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """``kill -9`` during a compaction leaves the new file uncommitted: the index still names
    the old one, and the next compaction clears the leftover."""
    path, _ = filled
    Path(f"{path}-rows1").write_bytes(b"\x01" * (7 * DIM))  # the interrupted one
    index = VectorIndex(path, NoteEmbedder())
    assert index.rebuilt is None
    assert index.search("body of n002.md", 1)[0].path == "n002.md"
    assert index.sync(LISTING[:20], _load)["removed"] == 20  # 60 dead rows of 120: compacted
    assert [f.name[-5:] for f in _rows_files(path)] == ["rows1"]
    assert Path(f"{path}-rows1").stat().st_size == 60 * DIM
    assert index.search("body of n002.md", 1)[0].path == "n002.md"
    index.close()


# -- races with other processes, hostile embedders, damage SQLite's check on open misses ------


class _HookedDb:
    """The index's SQLite connection, running ``action`` (another process's commit) just
    before the ``nth`` statement that starts with ``trigger``: the window between two
    statements of one search, where a concurrent writer can commit."""

    def __init__(self, db: sqlite3.Connection, trigger: str, action: Any, nth: int = 1) -> None:
        self.db, self.trigger, self.action, self.left = db, trigger, action, nth

    def execute(self, sql: str, *args: Any) -> Any:
        if self.left and sql.startswith(self.trigger):
            self.left -= 1
            if not self.left:
                self.action()
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def test_a_write_committed_while_a_search_loads_its_map_is_no_crash(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """Another process appends a note between ``_row_map``'s ``max(slot)`` and its listing of
    the rows (two statements, two snapshots): the slot listed past the arrays sized from the
    first made the search raise a bare ``IndexError`` (a recall then fails with an internal
    error). Seen with two writer and two reader processes: 20 ``IndexError`` in 25 s."""
    path, _ = filled
    writer = VectorIndex(path, NoteEmbedder())
    reader = VectorIndex(path, NoteEmbedder())
    reader._db = _HookedDb(  # type: ignore[assignment]
        reader._db,
        "SELECT slot, path, kind",
        lambda: writer.sync([*LISTING, ("new.md", 1, 1)], _load),
    )
    try:
        hits = reader.search("body of n030.md", 1)
    finally:
        reader._db = reader._db.db  # type: ignore[attr-defined]
    assert hits[0].path == "n030.md"
    assert reader.note_count() == 41  # nothing dropped: nothing was damaged
    writer.close()
    reader.close()


class _RacingEmbedder(NoteEmbedder):
    """Runs ``before_query`` (another process's sync) once, as the search embeds its query:
    after the search read its slots' map, before it reads the rows."""

    def __init__(self, before_query: Any) -> None:
        super().__init__()
        self.before_query = before_query

    def embed_query(self, text: str) -> Any:
        action, self.before_query = self.before_query, None
        if action is not None:
            action()
        return super().embed_query(text)


def test_a_compaction_by_another_process_during_a_search_is_no_damage(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """Another process compacts between the search's map (old slots) and its read of the
    rows (the old file is deleted, the new generation named): the search reported
    ``IndexDamaged`` ("holds only 60 rows; the 0 notes it holds were dropped") though nothing
    is damaged. The map keeps its generation's file open, so the search reads the rows its
    slots refer to. (The other process ran at the search's second read of the generation;
    the search now reads it once, inside the map's snapshot, so it runs as the query is
    embedded: the window between the map and the rows.)"""
    path, _ = filled
    writer = VectorIndex(path, NoteEmbedder())
    reader = VectorIndex(
        path,
        _RacingEmbedder(lambda: writer.sync(LISTING[20:], _load)),  # 20 removed: compacted
    )
    hits = reader.search("body of n030.md", 1)
    assert Path(f"{path}-rows1").exists() and not Path(f"{path}-rows0").exists()
    assert hits[0].path == "n030.md"
    writer.close()
    reader.close()


class _NaNQuery(FakeEmbedder):
    def embed_query(self, text: str) -> Any:
        return np.full(self.dimensions, np.nan, dtype=np.float32)


class _FewerVectors(FakeEmbedder):
    def embed_documents(self, texts: Any) -> Any:
        return np.asarray(super().embed_documents(texts))[:-1]


class _NarrowQuery(FakeEmbedder):
    def embed_query(self, text: str) -> Any:
        return super().embed_query(text)[:32]


class _NarrowDocuments(FakeEmbedder):
    def embed_documents(self, texts: Any) -> Any:
        return np.asarray(super().embed_documents(texts))[:, :32]


class _NaNDocument(FakeEmbedder):
    def embed_documents(self, texts: Any) -> Any:
        vecs = np.asarray(super().embed_documents(texts), dtype=np.float32)
        vecs[0, :] = np.nan
        return vecs


class _ZeroDimensions(FakeEmbedder):
    dimensions = 0

    def embed_documents(self, texts: Any) -> Any:
        return np.zeros((len(texts), 0), dtype=np.float32)

    def embed_query(self, text: str) -> Any:
        return np.zeros(0, dtype=np.float32)


@pytest.mark.parametrize(
    "embedder",
    [_FewerVectors, _NarrowQuery, _ZeroDimensions],
    ids=["fewer-vectors-than-texts", "query-of-the-wrong-dimension", "zero-dimensions"],
)
async def test_a_hostile_embedder_makes_recall_degraded_not_a_crash(
    stores: Any, vault: Path, embedder: type
) -> None:
    """An embedder returning one vector fewer than the texts it was given made
    ``VectorIndex.sync`` raise ``IndexError`` (``scales[i]``); a query vector of 32 dimensions
    for a 64-dimension index made the search raise ``ValueError`` (``matmul``). Neither is
    caught by the recall (it catches ``GoatError``, ``OSError``, ``sqlite3.Error``), nor is
    the ``ValueError`` of an embedder of 0 dimensions (``np.abs(vecs).max(axis=1)``): the
    exception reaches the caller (CLI: "unexpected IndexError", exit 1). The contract: the
    keyword hits, ``complete=False``, the reason in ``degraded``."""
    store = stores(vault, "fake", _spec(embedder()))
    result = await store.recall("phone", limit=3)
    assert result.items[0].path == "Phone tips.md"  # the keyword side still answers
    assert not result.complete
    assert any("embedder 'fake'" in why for why in result.degraded)


async def test_a_nan_query_vector_is_not_a_silent_keyword_only_answer(
    stores: Any, vault: Path
) -> None:
    """A query vector of NaN: every score is NaN, the vector search returns no hit, and the
    recall answered the keyword hits alone as ``complete=True``, ``degraded=()``: a
    keyword-only answer passed off as a complete hybrid one."""
    store = stores(vault, "fake", _spec(_NaNQuery()))
    result = await store.recall("phone", limit=10)
    assert not result.complete and result.degraded


def test_document_vectors_of_the_wrong_dimension_are_refused_typed(tmp_path: Path) -> None:
    """An embedder declaring 64 dimensions that returns 32-dimension document vectors: the
    sync wrote them (half a row each, misaligned) and committed their slots; every search
    then found "the rows file ends before row N", dropped those notes and re-embedded them,
    at every recall, with a reason blaming the row file. A sync must refuse such vectors
    with a typed error naming the embedder, writing nothing."""
    from goat_core.errors import GoatError

    path = tmp_path / "home" / "v.sqlite"
    index = VectorIndex(path, _NarrowDocuments())
    with pytest.raises(GoatError, match="dimension"):
        index.sync(LISTING, _load)
    assert index.note_count() == 0
    index.close()


def test_a_nan_document_vector_is_a_typed_error(tmp_path: Path) -> None:
    """NaN in one document vector: its scale is NaN, stored by SQLite as NULL, and the sync
    raised ``sqlite3.IntegrityError`` (NOT NULL constraint failed: chunks.scale), rolled back
    the whole batch, and did so again at every recall (semantic recall of every note gone,
    the reason an SQL message); ``reindex`` lets the ``IntegrityError`` through (it catches
    ``GoatError`` and ``OSError`` only). A sync must raise a typed error naming the embedder
    (or skip that note and say so)."""
    from goat_core.errors import GoatError

    index = VectorIndex(tmp_path / "home" / "v.sqlite", _NaNDocument())
    with pytest.raises(GoatError):
        index.sync(LISTING, _load)
    index.close()


def test_a_full_home_during_a_sync_is_store_unwritable(tmp_path: Path) -> None:
    """``VectorIndex.sync`` says it raises ``StoreUnwritable`` for a full home; when the row
    file still took a batch but SQLite could not, it raised a bare
    ``sqlite3.OperationalError`` ("database or disk is full"), which ``reindex`` does not
    type (exit 1, "unexpected OperationalError", instead of ``StoreUnwritable``, exit 6)."""
    from goat_core.errors import StoreUnwritable
    from goat_core.testing.fixtures import small_tmpfs

    with small_tmpfs(tmp_path / "mnt", "1m") as mnt:
        index = VectorIndex(mnt / "v.sqlite", NoteEmbedder())
        index.sync(LISTING, _load)
        more = [(f"x{i:04}.md", 1, 1) for i in range(3000)]
        with pytest.raises(StoreUnwritable):
            index.sync([*LISTING, *more], _load)
        assert index.search("body of n007.md", 1)[0].path == "n007.md"
        index.close()


async def test_semantic_recall_on_a_read_only_home_uses_the_vectors_held(
    tmp_path: Path, vault: Path
) -> None:
    """design.md: on a read-only GOAT home "a semantic recall ranks with the vectors already
    held and says so". The vector index's SQLite file could not even be opened there
    (``PRAGMA journal_mode=WAL`` wants its ``-shm``: "unable to open database file"), so
    recall answered keyword results only (``RowFile``'s read-only fallback is never reached).
    The keyword index does read a read-only home."""
    import subprocess

    from test_hybrid import _store

    from goat_core.testing.fixtures import small_tmpfs

    def lookup(name: str) -> Any:
        return _spec(FakeEmbedder())

    with small_tmpfs(tmp_path / "mnt", "8m") as mnt:
        home = GoatHome.from_env(mnt / "home")
        store = _store(home, vault, "fake", lookup)
        query = "between laptop and desktop"  # no keyword hit: synonyms, semantic only
        assert (await store.recall(query, limit=3)).items[0].path == "Sync across devices.md"
        await store.close()
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        try:
            store = _store(home, vault, "fake", lookup)
            result = await store.recall(query, limit=3)
            await store.close()
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
        assert result.items and result.items[0].path == "Sync across devices.md"
        assert not any("is unavailable" in why for why in result.degraded), result.degraded


def test_rows_written_after_the_row_file_was_deleted_reach_the_file(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """The row file deleted (a user clearing the GOAT home's index folder) while an index is
    open, e.g. in ``goat serve``: the open index keeps its descriptor and appends the next
    sync's rows to the unlinked file, commits their slots and reports them embedded; no other
    process can ever read them (each drops those notes as lost and re-embeds them, while the
    open one, reading the unlinked file, finds the others' rows mismatched: they take turns
    re-embedding). The rows of a committed sync must be in the file the index names."""
    path, _ = filled
    index = VectorIndex(path, NoteEmbedder())
    assert index.search("body of n001.md", 1)[0].path == "n001.md"
    Path(f"{path}-rows0").unlink()
    index.sync([*LISTING, ("new.md", 1, 1)], _load)
    names = [p.name[len(path.name) :] for p in _rows_files(path)]
    db = sqlite3.connect(path)
    (generation,) = db.execute("SELECT value FROM meta WHERE key = 'rows'").fetchone()
    db.close()
    assert f"-rows{generation}" in names
    rows = Path(f"{path}-rows{generation}")
    assert rows.stat().st_size >= (max(_slots(path, "new.md")) + 1) * DIM
    index.close()


def test_a_row_file_cut_short_during_a_compaction_is_no_bare_short_read(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """The row file cut short by someone else after the compaction's size check (seen with a
    process rewriting the file in place while another searched and synced: ``ShortRead:
    32768`` out of ``VectorIndex.sync``): ``_compact_if_sparse`` let ``copy_rows``'s
    ``ShortRead`` (a plain ``Exception``) out of ``sync``, and a recall lets it out to the
    caller (it catches ``GoatError``, ``OSError``, ``sqlite3.Error``). Expected: the damage
    found typed (``IndexDamaged``) or the compaction left for later."""
    from goat_core.errors import GoatError

    path, _ = filled
    index = VectorIndex(path, NoteEmbedder())
    rows = Path(f"{path}-rows0")
    index._db = _HookedDb(  # type: ignore[assignment]
        index._db, "SELECT slot FROM chunks ORDER BY slot", lambda: os.truncate(rows, 10 * DIM)
    )
    try:
        index.sync(LISTING[20:], _load)  # 20 removed: compaction
    except GoatError:
        pass
    finally:
        index._db = index._db.db  # type: ignore[attr-defined]
    index.close()


async def test_a_query_vector_of_zeros_adds_no_hits(stores: Any, vault: Path) -> None:
    """(Low; arguable.) A query the embedder maps to the zero vector (the fake one for
    ``...``; a hostile or broken embedder for any query): every note's cosine is 0 and the
    vector side returned every note as a hit; recall answered all four notes,
    ``complete=True``, though neither side matched anything (keyword-only recall of ``...``
    answers none). A zero query vector carries no ranking: it should add no hits (or say
    ``degraded``)."""
    store = stores(vault, "fake", _spec(FakeEmbedder()))
    result = await store.recall("...", limit=10)
    assert not result.items or not result.complete


def test_a_process_left_on_the_old_embedder_never_deletes_the_new_rows(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """The embedder's identity changes (a model upgrade) while another process (``goat
    serve``) still has the index open with the old model: the new one deletes and rebuilds
    both files; the old one keeps working on its deleted SQLite file, and its next compaction
    deletes every row file but its own old one (``_delete_rows``), the new index's live
    ``rows0`` included, and writes its old-model rows1 beside it. The new index then lost
    every row ("holds 0 rows ... the 40 notes whose rows were lost are re-embedded"): a whole
    store re-embedded with the real model."""
    path, _ = filled
    old = VectorIndex(path, NoteEmbedder())  # still open with fake@1
    new = VectorIndex(path, NoteEmbedder("fake@2"))
    assert new.rebuilt is not None and "fake@2" in new.rebuilt
    new.sync(LISTING, _load)
    new.close()
    old.sync(LISTING[20:], _load)  # 20 removed: the old process compacts
    old.close()
    again = VectorIndex(path, NoteEmbedder("fake@2"))
    assert again.rebuilt is None
    assert again.sync(LISTING, _load)["embedded"] == 0
    assert again.search("body of n005.md", 1)[0].path == "n005.md"
    again.close()


def test_a_damaged_page_that_passes_quick_check_is_rebuilt(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """One flipped bit in the vector SQLite file (here a cell of an index page; 5 of 300
    random single-bit flips did the like): ``PRAGMA quick_check`` on open passes it, then
    every sync or search raises a bare ``sqlite3.DatabaseError: database disk image is
    malformed``, in this process and in every new one (the check on open never finds it).
    Read from the code: a recall answers keyword-only, degraded, for good; ``reindex`` lets the
    ``DatabaseError`` out (it catches ``GoatError`` and ``OSError``). The module says the
    index is rebuilt "when SQLite reports its file damaged"."""
    path, _ = filled
    data = bytearray(path.read_bytes())
    assert len(data) == 40960  # the layout this offset was found in
    data[32676] ^= 1 << 2
    path.write_bytes(bytes(data))
    index = VectorIndex(path, NoteEmbedder())
    try:
        index.sync(LISTING, _load)
        index.search("body of n001.md", 1)
    except IndexDamaged:
        pass  # found and dropped: fine, the next open rebuilds
    finally:
        index.close()
    index = VectorIndex(path, NoteEmbedder())
    index.sync(LISTING, _load)
    assert index.search("body of n001.md", 1)[0].path == "n001.md"
    index.close()


class _InfDocument(FakeEmbedder):
    def embed_documents(self, texts: Any) -> Any:
        vecs = np.asarray(super().embed_documents(texts), dtype=np.float32)
        vecs[-1, 0] = np.inf  # one component of the batch's last text
        return vecs


async def test_an_infinite_document_vector_is_not_a_silently_lost_note(
    stores: Any, vault: Path
) -> None:
    """One ``inf`` component in the vector of a note's title row: its scale is ``inf``, its
    score NaN, and the note is left out of every semantic ranking, while the recall says
    ``complete=True``, ``degraded=()``: "between laptop and desktop" (synonyms only: the
    vector side's query) no longer finds "Sync across devices.md"."""
    store = stores(vault, "fake", _spec(_InfDocument()))
    result = await store.recall("between laptop and desktop", limit=5)
    paths = [item.path for item in result.items]
    assert "Sync across devices.md" in paths or not result.complete


async def test_reindex_types_a_hostile_embedders_failure(stores: Any, vault: Path) -> None:
    """``reindex`` with an embedder returning NaN: ``_reindex_all`` catches ``GoatError`` and
    ``OSError`` only, so the sync's ``sqlite3.IntegrityError`` (NOT NULL constraint failed:
    chunks.scale) reached the caller (CLI: "unexpected IntegrityError", exit 1) instead of
    ``ProviderUnavailable`` saying the keyword index is up to date."""
    store = stores(vault, "fake", _spec(_NaNDocument()))
    with pytest.raises(ProviderUnavailable, match="keyword index"):
        await store.reindex()


def test_a_compaction_racing_a_search_never_drops_healthy_notes(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """As above, with the other process adding 40 notes after its compaction (the new file
    then holds more rows than the search's old map): the search compared the new file's rows
    with the old slots' checksums, found 120 "damaged", and dropped 40 healthy notes of 60
    (re-embedded by the recall that follows: with a real model, most of a store)."""
    path, _ = filled
    writer = VectorIndex(path, NoteEmbedder())
    more = [(f"m{i:03}.md", 1, 1) for i in range(40)]

    def other_process() -> None:
        writer.sync(LISTING[20:], _load)  # compacted into rows1
        writer.sync([*LISTING[20:], *more], _load)

    reader = VectorIndex(path, _RacingEmbedder(other_process))
    assert reader.search("body of n030.md", 1)[0].path == "n030.md"
    assert reader.note_count() == 60
    # the next search reads the new generation
    assert reader.search("body of n025.md", 1)[0].path == "n025.md"
    writer.close()
    reader.close()


def test_a_process_on_a_rebuilt_index_refuses_to_append_rows(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """The process left on the old embedder (as above) syncs a new note: its SQLite file was
    deleted by the rebuild, so it refuses, typed, and writes nothing into the new index's
    row file."""
    path, _ = filled
    old = VectorIndex(path, NoteEmbedder())
    new = VectorIndex(path, NoteEmbedder("fake@2"))
    new.sync(LISTING, _load)
    new.close()
    size = Path(f"{path}-rows0").stat().st_size
    with pytest.raises(ProviderUnavailable, match="rebuilt by another process"):
        old.sync([*LISTING, ("new.md", 1, 1)], _load)
    old.close()
    assert Path(f"{path}-rows0").stat().st_size == size
    again = VectorIndex(path, NoteEmbedder("fake@2"))
    assert again.rebuilt is None and again.search("body of n005.md", 1)[0].path == "n005.md"
    again.close()


def test_a_compaction_between_the_generation_read_and_its_file_open_is_read_again(
    filled: tuple[Path, FakeEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process compacts after the search's snapshot named generation 0 and before the
    search opened its file: the file is gone (opening creates an empty one), the rows look
    missing, but the generation moved on: the search reads the map again, drops nothing."""
    path, _ = filled
    writer = VectorIndex(path, NoteEmbedder())
    reader = VectorIndex(path, NoteEmbedder())
    reader._rows.close()  # type: ignore[union-attr]
    reader._rows = None  # the next map opens its row file again
    opened = reader._open_rows
    racing = [lambda: writer.sync(LISTING[20:], _load)]  # 20 removed: compacted into rows1

    def row_file(name: str) -> Any:
        if racing and name.endswith("-rows0"):
            racing.pop()()
        return opened(name)

    monkeypatch.setattr(reader, "_open_rows", row_file)
    assert reader.search("body of n030.md", 1)[0].path == "n030.md"
    assert not racing  # the other process did run in that window
    assert reader.note_count() == 20
    writer.close()
    reader.close()


def test_a_symlink_in_place_of_the_row_file_is_never_followed(
    filled: tuple[Path, FakeEmbedder], tmp_path: Path
) -> None:
    """The row file replaced by a symbolic link to a file elsewhere: the index never writes
    through it; the link is removed and the notes whose rows it stood for are re-embedded."""
    path, _ = filled
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"keep")
    rows = Path(f"{path}-rows0")
    rows.unlink()
    rows.symlink_to(elsewhere)
    index = VectorIndex(path, NoteEmbedder())
    assert index.rebuilt is not None and "re-embedded" in index.rebuilt
    assert index.sync(LISTING, _load)["embedded"] == 40
    assert index.search("body of n007.md", 1)[0].path == "n007.md"
    index.close()
    assert not rows.is_symlink() and elsewhere.read_bytes() == b"keep"


def test_a_folder_in_place_of_the_row_file_is_a_typed_error(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    """A folder where the row file should be: typed ``IndexDamaged`` saying so (a recall
    answers degraded), not a bare ``IsADirectoryError``; the folder is left alone."""
    path, _ = filled
    rows = Path(f"{path}-rows0")
    rows.unlink()
    rows.mkdir()
    (rows / "user file").write_text("mine")
    with pytest.raises(IndexDamaged, match="not the vector rows file"):
        VectorIndex(path, NoteEmbedder())
    assert (rows / "user file").read_text() == "mine"


async def test_a_note_changed_while_the_home_is_read_only_ranks_with_the_vectors_held(
    tmp_path: Path, vault: Path
) -> None:
    """On a read-only GOAT home a note added since the vectors' last sync (the keyword index
    took it, through a binding without the embedder) cannot be embedded: the recall ranks
    with the vectors held and says the vector index could not take the change
    (``complete=False``), never "unavailable", never a bare SQLite error."""
    import subprocess

    from test_hybrid import _store

    from goat_core.testing.fixtures import small_tmpfs

    def lookup(name: str) -> Any:
        return _spec(FakeEmbedder())

    with small_tmpfs(tmp_path / "mnt", "8m") as mnt:
        home = GoatHome.from_env(mnt / "home")
        store = _store(home, vault, "fake", lookup)
        query = "between laptop and desktop"
        assert (await store.recall(query, limit=3)).items[0].path == "Sync across devices.md"
        await store.close()
        (vault / "Added.md").write_text("# Added\n\nRefunds of a phone.\n", encoding="utf-8")
        keyword_only = _store(home, vault, None, lookup)  # the keyword index takes the note
        assert (await keyword_only.recall("refunds phone", limit=3)).complete
        await keyword_only.close()
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        try:
            store = _store(home, vault, "fake", lookup)
            result = await store.recall(query, limit=3)
            await store.close()
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
    assert result.items[0].path == "Sync across devices.md"
    assert not result.complete
    assert any(
        "the vector index could not take the notes' latest changes" in why and "read-only" in why
        for why in result.degraded
    ), result.degraded
    assert not any("is unavailable" in why for why in result.degraded), result.degraded


class _Failing(FakeEmbedder):
    def embed_documents(self, texts: Any) -> Any:
        raise RuntimeError("the runtime's session died")

    def embed_query(self, text: str) -> Any:
        raise RuntimeError("the runtime's session died")


async def test_an_embedder_that_raises_makes_recall_degraded_and_reindex_typed(
    stores: Any, vault: Path
) -> None:
    """An embedder plugin raising its runtime's own exception: the recall answers the
    keyword hits degraded naming it, and reindex raises ``ProviderUnavailable`` (never a bare
    ``RuntimeError`` reaching the CLI as "unexpected")."""
    store = stores(vault, "fake", _spec(_Failing()))
    result = await store.recall("phone", limit=3)
    assert result.items[0].path == "Phone tips.md" and not result.complete
    assert any("RuntimeError: the runtime's session died" in why for why in result.degraded)
    with pytest.raises(ProviderUnavailable, match="keyword index"):
        await store.reindex()


def test_embedded_answers_as_the_snapshot_the_search_ranked(
    filled: tuple[Path, FakeEmbedder],
) -> None:
    # a note embedded by another connection between a search and embedded() was not scored
    # by that search: it must not count as embedded for it (its keyword side would lose
    # the weight of the vector side it never had)
    path, fake = filled
    reader, writer = VectorIndex(path, fake), VectorIndex(path, fake)
    try:
        assert reader.embedded(["new.md", "n001.md"]) == {"n001.md"}  # no search yet
        assert "new.md" not in {h.path for h in reader.search("new", 50)}
        writer.sync([*LISTING, ("new.md", 1, 1)], _load)
        assert reader.embedded(["new.md", "n001.md"]) == {"n001.md"}
        assert reader.search("new", 1)[0].path == "new.md"
        assert reader.embedded(["new.md", "n001.md"]) == {"new.md", "n001.md"}
        # this object's own change since its search: the index as it is now
        reader.sync([(p, m, z) for p, m, z in LISTING if p != "n001.md"], _load)
        assert reader.embedded(["new.md", "n001.md"]) == set()
    finally:
        reader.close()
        writer.close()
