"""The search index's tables (:data:`SCHEMA_VERSION`) and how they are created."""

from __future__ import annotations

import sqlite3

from goat_core.filestore.search._query import _TOKENIZER
from goat_core.filestore.search._records import IndexedDoc

SCHEMA_VERSION = 5
"""Bump when the tables, the tokenizer or the text preprocessing change: old indexes rebuild.
3: Porter stemming, aliases in a column of their own. 4: per-folder digests of the files.
5: frontmatter dates also in words (``goat_core/filestore/_pages.py``, ``date_words``)."""


def _meta_text(doc: IndexedDoc) -> str:
    return "\n".join([doc.description, " ".join(doc.tags)])


_SCHEMA = [
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE docs(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,"
    " mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, title TEXT NOT NULL,"
    " aliases TEXT NOT NULL, meta TEXT NOT NULL, extra TEXT NOT NULL, body BLOB NOT NULL,"
    " ident TEXT, problem TEXT, folder TEXT NOT NULL)",
    # covering index: the listing reads (path, mtime_ns, size, title, ident, problem) without
    # touching bodies
    "CREATE INDEX docs_stat ON docs(path, mtime_ns, size, title, ident, problem)",
    # covering index: the change scan reads one folder's stats
    "CREATE INDEX docs_folder ON docs(folder, path, mtime_ns, size)",
    # one row per folder holding indexed files: the digest of a listing of the folder's files
    # found equal to its rows (NULL once its rows change: the next sync compares the folder),
    # and how many rows that was
    "CREATE TABLE folders(folder TEXT PRIMARY KEY, digest BLOB, count INTEGER NOT NULL)",
    f"CREATE VIRTUAL TABLE fts USING fts5(title, aliases, meta, extra, body, content='',"
    f' tokenize="{_TOKENIZER}")',
]


def create_schema(db: sqlite3.Connection) -> None:
    """Drop every table and view of ``db`` (FTS shadow tables go with their table) and create
    :data:`_SCHEMA` at :data:`SCHEMA_VERSION`, inside the caller's write transaction."""
    names = db.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view')"
        " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'fts_%'"
    ).fetchall()
    for kind, name in names:
        db.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
    for stmt in _SCHEMA:
        db.execute(stmt)
    db.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


def schema_is_current(db: sqlite3.Connection) -> bool:
    """Whether ``db`` holds the tables of :data:`SCHEMA_VERSION` (a read, no transaction)."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone():
        got = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return got is not None and got[0] == str(SCHEMA_VERSION)
    return False


def install_schema(db: sqlite3.Connection) -> bool:
    """Inside a write transaction: create the tables unless another process just did.

    :returns: ``True`` when tables of another version (or an unversioned file) were replaced,
        ``False`` when the file was new or already current.
    """
    have = db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='meta'")
    version = None
    if have.fetchone():
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = row[0] if row else None
        if version == str(SCHEMA_VERSION):
            return False
        create_schema(db)
        return True
    create_schema(db)
    return False
