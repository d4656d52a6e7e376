"""The values the search index takes and gives: file stats, indexed documents, hits, results
and statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class FileStat:
    """One file of a store as the change scan saw it.

    ``path``: store-relative POSIX path with its extension (``Folder/Note.md``);
    ``mtime_ns``: ``os.stat().st_mtime_ns``; ``size``: bytes.
    """

    path: str
    mtime_ns: int
    size: int


class FileStatLike(Protocol):
    """Anything with a :class:`FileStat`'s three attributes (e.g. the
    :class:`goat_core.filestore.NoteFile` entries of a walk, passed without copying)."""

    @property
    def path(self) -> str: ...

    @property
    def mtime_ns(self) -> int: ...

    @property
    def size(self) -> int: ...


@dataclass(frozen=True)
class IndexedDoc:
    """What the index holds for one file. ``extra``: other frontmatter values as text.
    ``ident``: the note's own identifier (frontmatter ``id``), if any. ``problem``: why the
    file was only partly understood (e.g. its frontmatter does not parse), kept so the
    problem can be reported later without reading the file again (:meth:`SearchIndex.
    problems`)."""

    path: str
    title: str
    body: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    extra: str = ""
    ident: str | None = None
    problem: str | None = None


@dataclass(frozen=True)
class DocInfo:
    """One indexed file as listed by :meth:`SearchIndex.documents` (no body): store-relative
    ``path``, ``title``, ``ident`` and ``problem`` as in :class:`IndexedDoc`, and the
    ``(mtime_ns, size)`` of the version indexed."""

    path: str
    title: str
    ident: str | None
    problem: str | None
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class SyncStats:
    """Outcome of one :meth:`SearchIndex.sync`. ``skipped``: files the loader could not read
    (their previous row, if any, is kept and retried at the next sync). ``seconds``: wall time."""

    scanned: int
    added: int
    updated: int
    removed: int
    unchanged: int
    seconds: float
    skipped: int = 0


@dataclass(frozen=True)
class SearchHit:
    """One ranked note. ``score``: higher is better, above 0 for every hit (BM25F with a
    positive idf, see :mod:`goat_core.filestore.search`; comparable only within one result
    list). ``snippet``: about :data:`SNIPPET_WIDTH` characters of the original text around the
    best match, plain (whitespace runs made one space), ``…`` where cut; when only the title
    matched, the start of the note. ``spans``: ``(start, end)`` of each matched word in
    ``snippet`` (:func:`highlight` marks them, e.g. as ``==word==``)."""

    path: str
    title: str
    score: float
    snippet: str
    spans: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class SearchResults:
    """Ranked hits. ``total``: notes that matched (containing every term, or, when fewer than
    ``limit`` contain every term and the query has several, any term).
    ``complete``: ``False`` when more matched than returned (the hits are the top ``limit`` of
    ``total`` ranked notes) or the index could not be searched. ``degraded``: only reasons a
    part of the index could not be searched (e.g. it was corrupt and rebuilt), never the mere
    fact that more notes matched than were returned."""

    hits: list[SearchHit]
    total: int
    complete: bool
    degraded: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class IndexStats:
    """Size of an index: ``documents`` indexed, ``bytes`` on disk (database, WAL and shared
    memory files)."""

    path: str
    documents: int
    bytes: int
    schema_version: int
