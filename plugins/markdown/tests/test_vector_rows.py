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
from goat_core.errors import IndexDamaged, ProviderUnavailable
from goat_core.filestore.search import VectorIndex
from goat_core.host import GoatHome
from test_hybrid import NOTES, FakeEmbedder, _spec, _vector_file

home, stores, vault = test_hybrid.home, test_hybrid.stores, test_hybrid.vault  # fixtures

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


def test_recall_repairs_a_damaged_row_file(stores: Any, home: GoatHome, vault: Path) -> None:
    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    assert store.recall("between laptop and desktop", limit=10).items[0].path == (
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
    result = store.recall("between laptop and desktop", limit=10)
    assert result.items[0].path == "Sync across devices.md"
    assert result.complete and result.degraded == ()
    assert len(fake.embedded) - embedded == expected < total


def test_recall_says_degraded_when_the_repair_fails(
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
    store.recall("phone", limit=1)
    (rows,) = _rows_files(_vector_file(home, vault))
    os.truncate(rows, 0)
    fake.broken = True
    result = store.recall("refunds money back", limit=3)
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
