"""The search index on a full or read-only GOAT home (docs/design.md, Writes and outcomes: an
unwritable store). Reads keep answering from what is indexed, saying ``degraded`` once the
index could not take a change it needed; writes fail with ``StoreUnwritable`` naming the
index file. Each fault twice: injected at the index's write path (SQLite's own error texts,
runs everywhere), and for real on a small tmpfs (root only, where ``mount`` is allowed)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goat_core.errors import StoreUnwritable
from goat_core.filestore.search import FileStat, IndexedDoc, SearchIndex
from goat_core.filestore.search import _index as index_module
from goat_core.filestore.search._faults import unwritable_reason
from goat_core.testing.fixtures import fill_disk as fill
from goat_core.testing.fixtures import small_tmpfs as tmpfs

NOTES = {
    "alpha.md": "The lighthouse keeper logs every storm.",
    "beta.md": "Harbour fees are paid each quarter.",
}

_WRITES = ("BEGIN IMMEDIATE", "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP")


class _FailingWrites:
    """A connection whose writes fail with SQLite's ``message``; reads pass through."""

    def __init__(self, conn: sqlite3.Connection, message: str) -> None:
        self._conn = conn
        self._message = message

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.lstrip().upper().startswith(_WRITES) and " temp." not in sql:  # temp: memory
            raise sqlite3.OperationalError(self._message)
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@contextlib.contextmanager
def failing_writes(index: SearchIndex, message: str) -> Iterator[None]:
    real = index._conn
    assert real is not None
    index._conn = _FailingWrites(real, message)  # type: ignore[assignment]
    try:
        yield
    finally:
        index._conn = real


def _doc(path: str, body: str) -> IndexedDoc:
    return IndexedDoc(path=path, title=path[:-3], body=body)


def _sync(index: SearchIndex, notes: dict[str, str], version: int = 1) -> None:
    stats = [FileStat(p, version, len(b)) for p, b in notes.items()]
    index.sync(stats, lambda p: _doc(p, notes[p]))


REASON = (
    "the search index {path} could not take the notes' latest changes (its disk {what});"
    " answered from what it held before, which may miss or misrank changed notes"
)


@pytest.mark.parametrize(
    ("message", "reason", "what"),
    [
        ("database or disk is full", "full", "is full"),
        ("attempt to write a readonly database", "read-only", "is read-only"),
    ],
)
def test_an_index_that_cannot_take_a_change_answers_degraded_from_what_it_holds(
    tmp_path: Path, message: str, reason: str, what: str
) -> None:
    db = tmp_path / "home" / "index.sqlite"
    with SearchIndex(db) as index:
        _sync(index, NOTES)
        changed = {**NOTES, "gamma.md": "A new note about lighthouse lenses."}
        with failing_writes(index, message):
            # nothing changed: the index holds every note, the answer is complete
            _sync(index, NOTES)
            assert index.behind is None
            assert index.search("storm").complete is True
            # a new note the index cannot take: reads answer degraded
            _sync(index, changed)
            assert isinstance(index.behind, StoreUnwritable)
            assert index.behind.reason == reason
            old = index.search("storm")
            assert [h.path for h in old.hits] == ["alpha.md"]
            assert old.complete is False
            assert old.degraded == (REASON.format(path=db, what=what),)
            assert index.search("lenses").hits == []
            # a write must fail before it changes anything, naming the index file
            with pytest.raises(StoreUnwritable) as raised:
                index.check_writable()
            assert str(raised.value).startswith(f"cannot write the search index {db}: ")
            assert raised.value.path == str(db) and raised.value.reason == reason
            index.strict = True
            with pytest.raises(StoreUnwritable):
                _sync(index, changed)
            index.strict = False
            # a note a store just wrote: its row waits, the index says so
            index.update_one(_doc("delta.md", "delta"), FileStat("delta.md", 1, 5))
            assert index.remove("alpha.md") is False
            assert index.behind is not None
        _sync(index, changed)
        assert index.behind is None
        found = index.search("lenses")
        assert [h.path for h in found.hits] == ["gamma.md"] and found.complete is True


def test_an_index_that_cannot_be_opened_for_writing_is_read_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "index.sqlite"
    with SearchIndex(db) as index:
        _sync(index, NOTES)
    real_connect = sqlite3.connect

    def connect(target: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if target == str(db):  # the writable open (the read-only one is a file: URI)
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(index_module.sqlite3, "connect", connect)
    with SearchIndex(db) as index:
        assert [h.path for h in index.search("harbour").hits] == ["beta.md"]
        _sync(index, {**NOTES, "alpha.md": "rewritten"}, version=2)
        assert index.behind is not None and index.behind.reason == "read-only"
        with pytest.raises(StoreUnwritable, match="it is read-only"):
            index.check_writable()
        with pytest.raises(StoreUnwritable):
            index.rebuild()
    assert db.stat().st_size > 0  # never deleted to be rebuilt


def test_a_disk_io_error_counts_as_full_only_when_the_disk_is(tmp_path: Path) -> None:
    from goat_core.filestore.search._faults import write_fault

    # "disk I/O error" on a disk with room is an I/O error, not an unwritable store
    assert write_fault(sqlite3.OperationalError("disk I/O error"), tmp_path / "x", "it") is None
    assert unwritable_reason(tmp_path) is None
    assert unwritable_reason(tmp_path / "not" / "yet") is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes whatever the folder's mode")
def test_a_folder_without_write_permission_is_read_only(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert unwritable_reason(folder) == "read-only"
        assert unwritable_reason(folder / "index") == "read-only"
    finally:
        folder.chmod(0o700)


# -- a real tmpfs ---------------------------------------------------------------------------


def test_an_index_on_a_full_tmpfs_reads_and_refuses_writes(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "home") as home:
        db = home / "index" / "search.sqlite"
        with SearchIndex(db) as index:
            _sync(index, NOTES)
        fill(home)
        assert unwritable_reason(db.parent) == "full"
        with SearchIndex(db) as index:
            found = index.search("lighthouse")
            assert [h.path for h in found.hits] == ["alpha.md"] and found.complete is True
            _sync(index, {**NOTES, "gamma.md": "lighthouse lenses " * 2000})
            assert index.behind is not None and index.behind.reason == "full"
            again = index.search("lighthouse")
            assert again.complete is False and "its disk is full" in again.degraded[0]
            with pytest.raises(StoreUnwritable, match="the disk is full"):
                index.check_writable()
        (home / "filler").unlink()
        with SearchIndex(db) as index:
            _sync(index, {**NOTES, "gamma.md": "lighthouse lenses"})
            assert index.behind is None
            assert {h.path for h in index.search("lighthouse").hits} == {"alpha.md", "gamma.md"}


def test_an_index_on_a_read_only_tmpfs_reads_and_refuses_writes(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "home") as home:
        db = home / "index" / "search.sqlite"
        with SearchIndex(db) as index:
            _sync(index, NOTES)
        subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
        assert unwritable_reason(db.parent) == "read-only"
        with SearchIndex(db) as index:
            assert [h.path for h in index.search("harbour").hits] == ["beta.md"]
            _sync(index, {"beta.md": NOTES["beta.md"]})  # alpha.md gone: a change
            assert index.behind is not None and index.behind.reason == "read-only"
            with pytest.raises(StoreUnwritable, match="it is read-only"):
                index.check_writable()


def test_an_index_path_that_is_a_folder_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    """The exact input: the index file's path made a directory (recall and pages exited 6 on
    every call, and check said ok). The folder is moved aside whole, never deleted, and the
    index starts again."""
    from goat_core.filestore.search import SearchIndex

    db = tmp_path / "index" / "store-search.sqlite"
    db.mkdir(parents=True)
    (db / "someone's.txt").write_text("kept")
    index = SearchIndex(db)
    try:
        assert index.rebuilt and db.is_file()
        (aside,) = [p for p in db.parent.iterdir() if ".damaged-" in p.name]
        assert (aside / "someone's.txt").read_text() == "kept"
    finally:
        index.close()
